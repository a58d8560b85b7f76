#include "common/base/step_profile.h"

#include <gtest/gtest.h>

#include "common/base/proto_json.h"

namespace vfsynth {
namespace {

TEST(StepProfileTest, RecordsPhasesOfEachStep) {
  StepProfile profile;
  std::vector<v1::StepSample> observed;
  profile.SetObserver([&](const v1::StepSample& s) { observed.push_back(s); });
  profile.Add(StepPhase::kCompute, absl::Seconds(5));  // no open step: ignored
  {
    ScopedStep step(profile, v1::STEP_CRITIC, 7);
    profile.Add(StepPhase::kCompute, absl::Milliseconds(2));
    profile.Add(StepPhase::kCompute, absl::Milliseconds(1));
    profile.Add(StepPhase::kWait, absl::Milliseconds(4));
    EXPECT_EQ(Timed(profile, StepPhase::kCodec, [] { return 42; }), 42);
  }
  profile.Begin(v1::STEP_GENERATOR, 1);
  profile.Add(StepPhase::kDurability, absl::Milliseconds(3));
  profile.End();
  profile.End();  // nothing open: no sample
  const v1::StepProfile snapshot = profile.Snapshot();
  ASSERT_EQ(snapshot.samples_size(), 2);
  ASSERT_EQ(observed.size(), 2u);
  const v1::StepSample& critic = snapshot.samples(0);
  EXPECT_EQ(critic.kind(), v1::STEP_CRITIC);
  EXPECT_EQ(critic.index(), 7);
  EXPECT_DOUBLE_EQ(critic.compute_ms(), 3);
  EXPECT_DOUBLE_EQ(critic.wait_ms(), 4);
  EXPECT_GE(critic.codec_ms(), 0);
  EXPECT_LT(critic.codec_ms(), 1000);
  EXPECT_GE(critic.total_ms(), 0);
  EXPECT_EQ(snapshot.samples(1).kind(), v1::STEP_GENERATOR);
  EXPECT_DOUBLE_EQ(snapshot.samples(1).durability_ms(), 3);
  EXPECT_EQ(observed[1].index(), 1);
}

TEST(StepProfileTest, BeginDiscardsAnOpenStepAndKeepsTheLatestSamples) {
  StepProfile profile(/*capacity=*/3);
  profile.Begin(v1::STEP_CRITIC, 0);
  profile.Add(StepPhase::kCompute, absl::Seconds(1));
  profile.Begin(v1::STEP_CRITIC, 0);  // restarted (a rejoin): the first attempt is gone
  profile.End();
  EXPECT_DOUBLE_EQ(profile.Snapshot().samples(0).compute_ms(), 0);
  for (int i = 1; i <= 4; ++i) {
    profile.Begin(v1::STEP_CRITIC, i);
    profile.End();
  }
  const v1::StepProfile snapshot = profile.Snapshot();
  ASSERT_EQ(snapshot.samples_size(), 3);
  EXPECT_EQ(snapshot.samples(0).index(), 2);
  EXPECT_EQ(snapshot.samples(2).index(), 4);
}

TEST(StepProfileTest, WritesJsonThatReadsBack) {
  StepProfile profile;
  profile.Begin(v1::STEP_CRITIC_UPDATE, 3);
  profile.Add(StepPhase::kDurability, absl::Milliseconds(1.5));
  profile.End();
  const std::string path = ::testing::TempDir() + "/step_profile.json";
  ASSERT_TRUE(WriteStepProfile(profile, path).ok());
  v1::StepProfile read;
  ASSERT_TRUE(LoadJsonFile(path, &read).ok());
  ASSERT_EQ(read.samples_size(), 1);
  EXPECT_EQ(read.samples(0).kind(), v1::STEP_CRITIC_UPDATE);
  EXPECT_DOUBLE_EQ(read.samples(0).durability_ms(), 1.5);
}

TEST(ProtoJsonTest, DefaultValuedFieldsAreWrittenOnlyWhenAsked) {
  v1::StepSample sample;
  sample.set_index(4);  // compute_ms, wait_ms, ... stay 0
  const absl::StatusOr<std::string> sparse = ToJson(sample);
  const absl::StatusOr<std::string> full = ToJson(sample, /*include_defaults=*/true);
  ASSERT_TRUE(sparse.ok() && full.ok());
  EXPECT_EQ(sparse->find("wait_ms"), std::string::npos);
  EXPECT_NE(full->find("\"wait_ms\": 0"), std::string::npos) << *full;
  v1::StepSample read;
  ASSERT_TRUE(ParseJsonInto(*full, "full", &read).ok());
  EXPECT_EQ(read.index(), 4);
}

}  // namespace
}  // namespace vfsynth
