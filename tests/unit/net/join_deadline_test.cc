// The join phase's deadline: it moves with every party's step and ends a wait only after
// a whole timeout without one.
#include "server/core/join_deadline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace vfsynth {
namespace {

TEST(JoinDeadlineTest, AWaitLastsWhileStepsComeAndEndsATimeoutAfterTheLast) {
  JoinDeadline join(absl::Seconds(0.4));
  absl::Mutex mu;
  const absl::Time start = absl::Now();
  std::thread steps([&] {
    for (int i = 0; i < 6; ++i) {
      absl::SleepFor(absl::Seconds(0.1));
      join.Progress();
    }
  });
  bool never = false;
  bool met;
  {
    absl::MutexLock lock(&mu);
    met = join.Await(&mu, absl::Condition(&never));
  }
  const absl::Duration waited = absl::Now() - start;
  steps.join();
  EXPECT_FALSE(met);
  // The last step came at about 0.6 s: the wait ends about 0.4 s later, not at 0.4 s.
  EXPECT_GE(waited, absl::Seconds(0.95));
}

TEST(JoinDeadlineTest, AWaitEndsAsSoonAsItsConditionHolds) {
  JoinDeadline join(absl::Seconds(30));
  absl::Mutex mu;
  bool ready = false;
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(50));
    absl::MutexLock lock(&mu);
    ready = true;
  });
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(join.Await(&mu, absl::Condition(&ready)));
  setter.join();
}

TEST(JoinDeadlineTest, UntilCallsAFixedDeadlineWaitAgainOnlyWhileStepsMovedIt) {
  JoinDeadline join(absl::Seconds(0.2));
  std::atomic<int> calls = 0;
  auto wait = [&](absl::Time deadline) -> absl::Status {
    ++calls;
    absl::SleepFor(deadline - absl::Now());
    return absl::DeadlineExceededError("waited");
  };
  std::thread step([&] {
    absl::SleepFor(absl::Seconds(0.1));
    join.Progress();
  });
  const absl::Status status = join.Until(wait);
  step.join();
  EXPECT_TRUE(absl::IsDeadlineExceeded(status));
  EXPECT_EQ(calls.load(), 2);

  calls = 0;
  const absl::StatusOr<int> answered = join.Until([&](absl::Time) -> absl::StatusOr<int> {
    ++calls;
    return 7;
  });
  EXPECT_EQ(*answered, 7);
  EXPECT_EQ(calls.load(), 1);
}

TEST(JoinDeadlineTest, AStepNeverMovesTheDeadlineBack) {
  JoinDeadline join(absl::Seconds(10));
  const absl::Time first = join.Get();
  join.Progress();
  EXPECT_GE(join.Get(), first);
  EXPECT_LE(join.Get(), absl::Now() + absl::Seconds(10));
}

}  // namespace
}  // namespace vfsynth
