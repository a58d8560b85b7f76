// The per-user participation ledger: the cap holds across restarts, a retransmitted
// answer is not counted twice, and another run, version or damaged file is refused.
#include "common/privacy/participation_ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace vfsynth::privacy {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ParticipationLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() /
             absl::StrCat("vfsynth_participation_", getpid(), "_",
                          ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove(path_);
  }
  void TearDown() override { fs::remove(path_); }
  std::string ReadAll() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  void Write(const std::string& contents) const {
    std::ofstream(path_, std::ios::trunc) << contents;
  }

  std::string path_;
  ParticipationConfig config_{"run-h", /*cap=*/2, /*epsilon_per_participation=*/4.0};
};

TEST_F(ParticipationLedgerTest, TheCapHoldsAcrossARestart) {
  {
    auto ledger = ParticipationLedger::Open(path_, config_);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    ASSERT_TRUE((*ledger)->Take(0, "u1").ok());
    ASSERT_TRUE((*ledger)->Take(0, "u2").ok());
    ASSERT_TRUE((*ledger)->Take(3, "u1").ok());
    const absl::Status over = (*ledger)->Take(5, "u1");
    EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
    EXPECT_THAT(over.message(), HasSubstr("cap of 2 rounds (epsilon 8)"));
  }
  const std::string before = ReadAll();
  auto ledger = ParticipationLedger::OpenExisting(path_, config_);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ((*ledger)->participations("u1"), 2);
  EXPECT_EQ((*ledger)->participations("u2"), 1);
  EXPECT_EQ((*ledger)->participations("u3"), 0);
  EXPECT_EQ((*ledger)->users(), 2);
  EXPECT_DOUBLE_EQ((*ledger)->epsilon_spent("u1"), 8.0);
  EXPECT_DOUBLE_EQ((*ledger)->max_epsilon_spent(), 8.0);
  EXPECT_FALSE((*ledger)->CanTake("u1"));
  EXPECT_TRUE((*ledger)->CanTake("u2"));
  EXPECT_EQ((*ledger)->Take(6, "u1").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReadAll(), before);  // a refused answer writes nothing
}

TEST_F(ParticipationLedgerTest, TheSameAnswerTakenAgainIsCountedOnce) {
  auto ledger = ParticipationLedger::Open(path_, config_);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  ASSERT_TRUE((*ledger)->Take(1, "u1").ok());
  const std::string once = ReadAll();
  ASSERT_TRUE((*ledger)->Take(1, "u1").ok());
  EXPECT_EQ(ReadAll(), once);
  EXPECT_EQ((*ledger)->participations("u1"), 1);
  EXPECT_EQ((*ledger)->Take(0, "u1").code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ParticipationLedgerTest, ARoundStaysBoundToItsFirstQuestionAcrossARestart) {
  std::string id;
  {
    auto ledger = ParticipationLedger::Open(path_, config_);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    id = (*ledger)->id();
    EXPECT_EQ(id.size(), 64u);
    ASSERT_TRUE((*ledger)->BindRound(4, "model-a").ok());
    ASSERT_TRUE((*ledger)->Take(4, "u1").ok());
    const std::string once = ReadAll();
    ASSERT_TRUE((*ledger)->BindRound(4, "model-a").ok());
    EXPECT_EQ(ReadAll(), once);
    const absl::Status other = (*ledger)->BindRound(4, "model-b");
    EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition) << other;
    EXPECT_EQ(ReadAll(), once);  // a refused question writes nothing
    EXPECT_EQ((*ledger)->records(), 2);
  }
  auto ledger = ParticipationLedger::OpenExisting(path_, config_);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ((*ledger)->id(), id);
  EXPECT_EQ((*ledger)->records(), 2);
  EXPECT_EQ((*ledger)->BindRound(4, "model-b").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE((*ledger)->BindRound(4, "model-a").ok());
  EXPECT_TRUE((*ledger)->BindRound(2, "model-b").ok());
  EXPECT_EQ((*ledger)->BindRound(3, "a\tb").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ParticipationLedgerTest, AnotherRunConfigurationOrVersionIsRefused) {
  ASSERT_TRUE(ParticipationLedger::Open(path_, config_).ok());
  ParticipationConfig wider = config_;
  wider.cap = 3;
  const absl::Status other = ParticipationLedger::Open(path_, wider).status();
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.message(), HasSubstr("cap is '2', this run has '3'"));

  // The header rewritten with another version and a valid checksum.
  const std::string body = FormatLedgerLine(
      "vfsynth-participation-ledger",
      {{"version", "0"}, {"run_id", "run-h"}, {"cap", "2"}, {"epsilon_per_participation", "4"}});
  Write(body);
  const absl::Status version = ParticipationLedger::Open(path_, config_).status();
  EXPECT_EQ(version.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(version.message(), HasSubstr("has format version 0; this build reads version 3"));
}

TEST_F(ParticipationLedgerTest, ATornLastLineIsDroppedAndDamageIsDataLoss) {
  {
    auto ledger = ParticipationLedger::Open(path_, config_);
    ASSERT_TRUE(ledger.ok());
    ASSERT_TRUE((*ledger)->Take(0, "u1").ok());
  }
  const std::string good = ReadAll();
  Write(good + "take\tround=1\tuser=u1");  // a crash mid-append
  {
    auto ledger = ParticipationLedger::Open(path_, config_);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    EXPECT_EQ((*ledger)->participations("u1"), 1);
  }
  EXPECT_EQ(ReadAll(), good);
  std::string damaged = good;
  damaged[damaged.rfind("u1")] = 'x';  // the user of the last line, its checksum unchanged
  Write(damaged);
  EXPECT_EQ(ParticipationLedger::Open(path_, config_).status().code(), absl::StatusCode::kDataLoss);
}

// A take removed from the middle would put its user back under the cap: the chain of
// lines breaks where it was, and the file and line are named.
TEST_F(ParticipationLedgerTest, ARemovedTakeIsRefusedNamingTheFileAndTheLine) {
  {
    auto ledger = ParticipationLedger::Open(path_, config_);
    ASSERT_TRUE(ledger.ok());
    ASSERT_TRUE((*ledger)->Take(0, "u1").ok());
    ASSERT_TRUE((*ledger)->Take(1, "u1").ok());
    ASSERT_TRUE((*ledger)->Take(1, "u2").ok());
  }
  std::string text = ReadAll();
  const size_t second = text.find("take\tround=1\tuser=u1");
  ASSERT_NE(second, std::string::npos);
  text.erase(second, text.find('\n', second) + 1 - second);
  Write(text);
  const absl::Status status = ParticipationLedger::Open(path_, config_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(),
              HasSubstr("participation ledger " + path_ + " line 3 does not follow line 2"));
  absl::StatusOr<ParticipationInspection> inspection = ParticipationLedger::Inspect(path_);
  ASSERT_TRUE(inspection.ok()) << inspection.status();
  EXPECT_EQ(inspection->verification.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(inspection->ledger->participations("u1"), 1);
}

// A round's users are taken with one write: all of them, chained line by line as single
// takes are (the file replays), or none when one of them may not answer.
TEST_F(ParticipationLedgerTest, ARoundsUsersAreTakenTogetherOrNotAtAll) {
  {
    auto ledger = ParticipationLedger::Open(path_, config_);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    ASSERT_TRUE((*ledger)->Take(0, "u1").ok());
    ASSERT_TRUE((*ledger)->Take(1, "u1").ok());  // u1 at its cap of 2
    const std::string before = ReadAll();
    EXPECT_EQ((*ledger)->TakeAll(2, {"u2", "u1", "u3"}).code(),
              absl::StatusCode::kResourceExhausted);
    EXPECT_EQ((*ledger)->TakeAll(2, {"u2", "u3", "u2"}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ((*ledger)->TakeAll(0, {"u2", "u1"}).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(ReadAll(), before);
    EXPECT_EQ((*ledger)->users(), 1);
    ASSERT_TRUE((*ledger)->TakeAll(2, {"u2", "u3", "u4"}).ok());
    // Asked again (a restart, a replay): recorded already, nothing written.
    const std::string after = ReadAll();
    ASSERT_TRUE((*ledger)->TakeAll(2, {"u4", "u2"}).ok());
    EXPECT_EQ(ReadAll(), after);
    EXPECT_EQ((*ledger)->records(), 5);
  }
  auto reopened = ParticipationLedger::OpenExisting(path_, config_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->users(), 4);
  EXPECT_EQ((*reopened)->participations("u3"), 1);
  EXPECT_EQ((*reopened)->last_round("u4"), 2);
  EXPECT_EQ((*reopened)->participations("u1"), 2);
}

TEST_F(ParticipationLedgerTest, BadInputIsRefused) {
  EXPECT_EQ(ParticipationLedger::OpenExisting(path_, config_).status().code(),
            absl::StatusCode::kNotFound);
  for (ParticipationConfig bad :
       {ParticipationConfig{"", 1, 1.0}, ParticipationConfig{"r", 0, 1.0},
        ParticipationConfig{"r", 1, 0.0}, ParticipationConfig{"r\tx", 1, 1.0}}) {
    EXPECT_EQ(ParticipationLedger::Open(path_, bad).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  auto ledger = ParticipationLedger::Open(path_, config_);
  ASSERT_TRUE(ledger.ok());
  EXPECT_EQ((*ledger)->Take(0, "").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*ledger)->Take(0, "a\tb").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*ledger)->Take(-1, "u").code(), absl::StatusCode::kInvalidArgument);
  // One process at a time.
  EXPECT_EQ(ParticipationLedger::Open(path_, config_).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace vfsynth::privacy
