#ifndef VFSYNTH_SERVER_CORE_JOIN_DEADLINE_H_
#define VFSYNTH_SERVER_CORE_JOIN_DEADLINE_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace vfsynth {

// The end of the join phase (registration, alignment, attestation, label pairs, the
// streams' start): `timeout` after the latest step any party made. A large table's
// alignment takes as long as it needs while it goes on, and a party that stops answering
// still ends the run `timeout` after the last step. Thread-safe.
class JoinDeadline {
 public:
  explicit JoinDeadline(absl::Duration timeout);

  // A party took a step: the deadline becomes `timeout` from now (it never moves back).
  void Progress();
  absl::Time Get() const;
  absl::Duration timeout() const { return timeout_; }

  // mu->AwaitWithDeadline(condition, deadline), waiting again while steps moved the
  // deadline. `mu` is held. False once the deadline passed with no step since.
  bool Await(absl::Mutex* mu, const absl::Condition& condition) const;

  // `wait(deadline)` for a wait that takes a fixed deadline, called again while it ends in
  // DEADLINE_EXCEEDED and steps moved the deadline meanwhile. `wait` must be idempotent.
  template <typename Wait>
  auto Until(const Wait& wait) const {
    for (;;) {
      const absl::Time deadline = Get();
      auto result = wait(deadline);
      if (!absl::IsDeadlineExceeded(StatusOf(result)) || Get() <= deadline) return result;
    }
  }

 private:
  static const absl::Status& StatusOf(const absl::Status& status) { return status; }
  template <typename T>
  static const absl::Status& StatusOf(const absl::StatusOr<T>& result) {
    return result.status();
  }

  const absl::Duration timeout_;
  std::atomic<int64_t> deadline_ns_;  // absl::ToUnixNanos of the deadline
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_JOIN_DEADLINE_H_
