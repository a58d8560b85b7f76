#include "common/base/background_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"

namespace vfsynth {
namespace {

TEST(BackgroundTaskTest, RunsJobsInOrderAndReportsTheirStatus) {
  BackgroundTask task;
  EXPECT_TRUE(task.Await().ok());  // nothing ran yet
  std::vector<int> order;
  ASSERT_TRUE(task.Start([&] {
                    absl::SleepFor(absl::Milliseconds(20));
                    order.push_back(1);
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(task.Start([&] {  // waits for the first job
                    order.push_back(2);
                    return absl::DataLossError("disk full");
                  })
                  .ok());
  // The failed job's error comes back once, and stops the next job from starting.
  bool started = false;
  const absl::Status refused = task.Start([&] {
    started = true;
    return absl::OkStatus();
  });
  EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(started);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_TRUE(task.Await().ok());
}

TEST(BackgroundTaskTest, DestructorWaitsForTheJob) {
  std::atomic<bool> done{false};
  {
    BackgroundTask task;
    ASSERT_TRUE(task.Start([&] {
                      absl::SleepFor(absl::Milliseconds(20));
                      done = true;
                      return absl::OkStatus();
                    })
                    .ok());
  }
  EXPECT_TRUE(done);
}

TEST(BackgroundTaskTest, RunsEveryJobOnOneThreadOtherThanTheCaller) {
  BackgroundTask task;
  std::vector<std::thread::id> ids(3);
  for (auto& id : ids) {
    ASSERT_TRUE(task.Start([&id] {
                      id = std::this_thread::get_id();
                      return absl::OkStatus();
                    })
                    .ok());
    ASSERT_TRUE(task.Await().ok());
  }
  EXPECT_NE(ids[0], std::this_thread::get_id());
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_EQ(ids[2], ids[0]);
}

TEST(BackgroundTaskTest, AnUnusedTaskEndsAtOnce) {
  BackgroundTask task;
  EXPECT_TRUE(task.Await().ok());
}

}  // namespace
}  // namespace vfsynth
