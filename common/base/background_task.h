#ifndef VFSYNTH_COMMON_BASE_BACKGROUND_TASK_H_
#define VFSYNTH_COMMON_BASE_BACKGROUND_TASK_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace vfsynth {

// Runs one job at a time on its own thread, in submission order, so slow I/O (an
// fsync'ed checkpoint write) or independent compute can overlap the caller's work.
// The thread is started by the first job and kept: a fresh thread per job costs
// about as much as a small job (clone, stack, and LibTorch's and OpenBLAS's
// per-thread set-up on its first tensor operation), and the curator starts one per
// critic step. Not thread-safe: one owner thread calls Start and Await.
class BackgroundTask {
 public:
  BackgroundTask() = default;
  ~BackgroundTask();
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;

  // Waits for the previous job; if it failed, returns its error and does not start
  // `job`. Otherwise starts `job` and returns OK.
  absl::Status Start(std::function<absl::Status()> job);
  // Waits for the running job (if any) and returns its status (OK if none ran).
  // An error is returned once; the next Await is OK.
  absl::Status Await();

 private:
  void Work();

  absl::Mutex mu_;
  std::function<absl::Status()> job_ ABSL_GUARDED_BY(mu_);  // set: waiting or running
  bool busy_ ABSL_GUARDED_BY(mu_) = false;                  // a job is queued or running
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);  // of the last finished job
  std::thread worker_;                        // started by the first Start
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_BACKGROUND_TASK_H_
