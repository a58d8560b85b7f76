#ifndef VFSYNTH_COMMON_UTIL_BACKGROUND_TASK_H_
#define VFSYNTH_COMMON_UTIL_BACKGROUND_TASK_H_

#include <functional>
#include <thread>

#include "absl/status/status.h"

namespace vfsynth {

// Runs one job at a time on its own thread, in submission order, so slow I/O (an
// fsync'ed checkpoint write) can overlap the caller's work. Not thread-safe: one
// owner thread calls Start and Await.
class BackgroundTask {
 public:
  BackgroundTask() = default;
  ~BackgroundTask() { Await().IgnoreError(); }
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;

  // Waits for the previous job; if it failed, returns its error and does not start
  // `job`. Otherwise starts `job` and returns OK.
  absl::Status Start(std::function<absl::Status()> job);
  // Waits for the running job (if any) and returns its status (OK if none ran).
  // An error is returned once; the next Await is OK.
  absl::Status Await();

 private:
  std::thread worker_;
  absl::Status status_;  // written by the worker, read after join
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_UTIL_BACKGROUND_TASK_H_
