#include "server/core/join_deadline.h"

namespace vfsynth {

JoinDeadline::JoinDeadline(absl::Duration timeout)
    : timeout_(timeout), deadline_ns_(absl::ToUnixNanos(absl::Now() + timeout)) {}

void JoinDeadline::Progress() {
  const int64_t moved = absl::ToUnixNanos(absl::Now() + timeout_);
  int64_t current = deadline_ns_.load();
  while (current < moved && !deadline_ns_.compare_exchange_weak(current, moved)) {
  }
}

absl::Time JoinDeadline::Get() const { return absl::FromUnixNanos(deadline_ns_.load()); }

bool JoinDeadline::Await(absl::Mutex* mu, const absl::Condition& condition) const {
  for (;;) {
    const absl::Time deadline = Get();
    if (mu->AwaitWithDeadline(condition, deadline)) return true;
    if (Get() <= deadline) return false;
  }
}

}  // namespace vfsynth
