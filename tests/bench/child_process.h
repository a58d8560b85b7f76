#ifndef VFSYNTH_TESTS_BENCH_CHILD_PROCESS_H_
#define VFSYNTH_TESTS_BENCH_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace vfsynth::bench {

// A child process whose stdout and stderr go to a log file. The destructor kills
// (SIGKILL) and reaps a child that is still running.
class ChildProcess {
 public:
  static absl::StatusOr<ChildProcess> Spawn(const std::vector<std::string>& argv,
                                            const std::string& log_path);
  ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_), argv0_(std::move(other.argv0_)) {
    other.pid_ = -1;
  }
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();

  // Waits for the exit (killing the child at `deadline`); OK only for exit code 0.
  absl::Status Wait(absl::Time deadline);

 private:
  ChildProcess(pid_t pid, std::string argv0) : pid_(pid), argv0_(std::move(argv0)) {}
  pid_t pid_;
  std::string argv0_;
};

}  // namespace vfsynth::bench

#endif  // VFSYNTH_TESTS_BENCH_CHILD_PROCESS_H_
