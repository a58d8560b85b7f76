// The party's rules for answering a repeated question with the bytes it sent first:
// noisy replies durable before they leave, noiseless ones journaled once sent, recomputable
// ones journaled only when the critic they came from is about to change.
#include "client/core/reply_keeper.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

v1::CuratorMessage CriticTask(int64_t round, int64_t step) {
  v1::CuratorMessage message;
  message.set_run_id("r");
  message.set_round(round);
  message.set_step(step);
  message.mutable_critic_task()->mutable_fake_slice()->add_shape(1);
  return message;
}

v1::CuratorMessage GeneratorTask(int64_t round) {
  v1::CuratorMessage message;
  message.set_run_id("r");
  message.set_round(round);
  message.set_step(-1);
  message.mutable_generator_task()->mutable_fake_slice()->add_shape(1);
  return message;
}

v1::PartyMessage Reply(const std::string& marker) {
  v1::PartyMessage reply;
  reply.set_run_id(marker);
  return reply;
}

class ReplyKeeperTest : public ::testing::Test {
 protected:
  void Open(v1::PrivacyConfig::Mode mode) {
    path_ = ::testing::TempDir() + "/reply_keeper_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove(path_);
    auto journal = ReplyJournal::Open(path_);
    ASSERT_TRUE(journal.ok()) << journal.status();
    keeper_ = std::make_unique<ReplyKeeper>(mode, /*n_critic=*/2, *std::move(journal), &committer_);
  }
  // What a restarted party would find in the journal file, durable or not.
  size_t OnDisk() {
    auto journal = ReplyJournal::Open(path_);
    EXPECT_TRUE(journal.ok()) << journal.status();
    return journal.ok() ? (*journal)->size() : 0;
  }

  std::string path_;
  BackgroundTask committer_;
  std::unique_ptr<ReplyKeeper> keeper_;
};

TEST_F(ReplyKeeperTest, NoisyFeaturesAreJournaledBeforeTheyLeave) {
  Open(v1::PrivacyConfig::strict);
  ASSERT_TRUE(keeper_->Keep(CriticTask(0, 0), Reply("noisy")).ok());
  EXPECT_EQ(OnDisk(), 1u);
  auto again = keeper_->Journaled(CriticTask(0, 0));
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->run_id(), "noisy");
}

TEST_F(ReplyKeeperTest, NoiselessFeaturesAreJournaledOnceSent) {
  Open(v1::PrivacyConfig::dpsgd);
  ASSERT_TRUE(keeper_->Keep(CriticTask(0, 0), Reply("clean")).ok());
  EXPECT_EQ(keeper_->journaled(), 0u);  // recomputable until the next message
  ASSERT_TRUE(keeper_->BeforeMessage(/*durable_round=*/0).ok());
  ASSERT_TRUE(committer_.Await().ok());  // the flush runs on the state-writing queue
  EXPECT_EQ(OnDisk(), 1u);
}

TEST_F(ReplyKeeperTest, RecomputableRepliesAreJournaledOnlyWhenTheCriticChanges) {
  Open(v1::PrivacyConfig::strict);
  ASSERT_TRUE(keeper_->Keep(GeneratorTask(3), Reply("round 3")).ok());
  EXPECT_EQ(keeper_->journaled(), 0u);
  auto absent = keeper_->Journaled(GeneratorTask(3));
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
  // The curator's durable checkpoint is past round 3: nothing to keep.
  ASSERT_TRUE(keeper_->BeforeCriticUpdate(/*durable_round=*/4).ok());
  EXPECT_EQ(keeper_->journaled(), 0u);
  ASSERT_TRUE(keeper_->Keep(GeneratorTask(5), Reply("round 5")).ok());
  // It is not: the curator may ask round 5 again after the critic changed.
  ASSERT_TRUE(keeper_->BeforeCriticUpdate(/*durable_round=*/5).ok());
  EXPECT_EQ(keeper_->journaled(), 1u);
  ASSERT_TRUE(keeper_->Sync().ok());
  EXPECT_EQ(OnDisk(), 1u);
}

TEST_F(ReplyKeeperTest, RefusesAQuestionAskedAgainWithOtherInputs) {
  Open(v1::PrivacyConfig::strict);
  ASSERT_TRUE(keeper_->Keep(CriticTask(0, 1), Reply("noisy")).ok());
  v1::CuratorMessage changed = CriticTask(0, 1);
  changed.mutable_critic_task()->mutable_fake_slice()->add_shape(2);
  const auto refused = keeper_->Journaled(changed);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("again with other inputs"));
  // When it asked does not matter, only what.
  v1::CuratorMessage later = CriticTask(0, 1);
  later.set_durable_round(7);
  EXPECT_TRUE(keeper_->Journaled(later).ok());
}

}  // namespace
}  // namespace vfsynth
