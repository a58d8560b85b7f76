#include "common/privacy/ledger.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/fnv.h"
#include "common/privacy/ledger_report.h"
#include "common/privacy/accountant.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vfsynth::privacy {
namespace {

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("vfsynth_ledger_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "party-a.ledger").string();
    config_.run_id = "run-42";
    config_.delta = 1e-5;
    config_.epsilon_budget = 5.0;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string ReadAll() const {
    std::ifstream in(path_);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

  std::vector<std::string> Lines() const {
    return absl::StrSplit(ReadAll(), '\n', absl::SkipEmpty());
  }
  void WriteLines(const std::vector<std::string>& lines) const {
    std::ofstream(path_, std::ios::trunc) << absl::StrJoin(lines, "\n") << "\n";
  }
  // A ledger of charges for rounds 0 .. n - 1, closed again.
  void WriteCharges(int n) {
    auto ledger = *PrivacyLedger::Open(path_, config_);
    for (int round = 0; round < n; ++round) ASSERT_TRUE(ledger->Charge(round, mechanism_).ok());
  }
  // Both ways of opening refuse the ledger as DATA_LOSS naming the file and `where`.
  void ExpectRefused(const std::string& where) {
    for (const auto& open : {PrivacyLedger::Open, PrivacyLedger::OpenExisting}) {
      const absl::Status status = open(path_, config_).status();
      EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
      EXPECT_THAT(status.message(), ::testing::HasSubstr("privacy ledger " + path_ + " " + where))
          << status;
    }
  }

  // VFLGAN's Adult setting with the party's two releases per step.
  const StepMechanism mechanism_{{1.6, 1.6}, 64 / 42960.0, Sampler::kWithoutReplacement};
  std::filesystem::path dir_;
  std::string path_;
  LedgerConfig config_;
};

TEST_F(LedgerTest, ChargesAccumulateLikeTheAccountant) {
  auto ledger = PrivacyLedger::Open(path_, config_);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ((*ledger)->Spent().epsilon, 0.0);
  EXPECT_EQ((*ledger)->Spent().last_round, -1);
  for (int round = 0; round < 100; ++round) ASSERT_TRUE((*ledger)->Charge(round, mechanism_).ok());
  ASSERT_TRUE((*ledger)->Charge(100, mechanism_, 50).ok());  // one round of 50 steps

  const PrivacySpent spent = (*ledger)->Spent();
  const EpsilonAndOrder expected = *ComputeEpsilon(mechanism_, 150, 1e-5, Conversion::kImproved);
  EXPECT_NEAR(spent.epsilon, expected.epsilon, 1e-12);
  EXPECT_EQ(spent.order, expected.order);
  EXPECT_EQ(spent.rounds, 101);
  EXPECT_EQ(spent.steps, 150);
  EXPECT_EQ(spent.last_round, 100);
  // Other parties know the indices: q = 1.
  StepMechanism exposed = mechanism_;
  exposed.sample_rate = 1.0;
  EXPECT_NEAR(spent.epsilon_unamplified,
              ComputeEpsilon(exposed, 150, 1e-5, Conversion::kImproved)->epsilon, 1e-9);
  EXPECT_GT(spent.epsilon_unamplified, 10 * spent.epsilon);
}

TEST_F(LedgerTest, RefusesTheRoundThatWouldExceedTheBudget) {
  // Each step costs a sizeable part of the budget of 5: only a few fit.
  const StepMechanism heavy{{2.0}, 0.5, Sampler::kWithoutReplacement};
  auto ledger = *PrivacyLedger::Open(path_, config_);
  int round = 0;
  while (*ledger->CanCharge(heavy)) {
    ASSERT_TRUE(ledger->Charge(round, heavy).ok()) << round;
    ++round;
    ASSERT_LT(round, 1000);
  }
  EXPECT_GT(round, 1);
  // The budget is checked before a round, so it is never overshot.
  EXPECT_LE(ledger->Spent().epsilon, config_.epsilon_budget);
  EXPECT_GT(ledger->SpentAfter(heavy)->epsilon, config_.epsilon_budget);
  const absl::Status status = ledger->Charge(round, heavy);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_EQ(ledger->Spent().rounds, round);  // the refused round left no trace
  EXPECT_FALSE(ledger->IsCharged(round));
  // Refusal survives a restart.
  ledger.reset();
  auto reopened = *PrivacyLedger::Open(path_, config_);
  EXPECT_EQ(reopened->Charge(round, heavy).code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(LedgerTest, UnamplifiedBudgetIsEnforcedWhenSet) {
  config_.epsilon_budget = 100.0;
  config_.epsilon_budget_unamplified = 20.0;
  auto ledger = *PrivacyLedger::Open(path_, config_);
  int round = 0;
  while (ledger->Charge(round, mechanism_).ok()) ++round;
  EXPECT_GT(round, 0);
  EXPECT_LE(ledger->Spent().epsilon_unamplified, 20.0);
  EXPECT_EQ(ledger->Charge(round, mechanism_).code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(LedgerTest, RestartReplaysWithoutResetOrDoubleCount) {
  PrivacySpent before;
  {
    auto ledger = *PrivacyLedger::Open(path_, config_);
    for (int round = 0; round < 10; ++round) ASSERT_TRUE(ledger->Charge(round, mechanism_).ok());
    // Same process retries a round: no double count.
    ASSERT_TRUE(ledger->Charge(9, mechanism_).ok());
    before = ledger->Spent();
    EXPECT_EQ(before.rounds, 10);
    // A second opener is refused while this one holds the file.
    EXPECT_EQ(PrivacyLedger::Open(path_, config_).status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
  auto reopened = *PrivacyLedger::Open(path_, config_);
  const PrivacySpent after = reopened->Spent();
  EXPECT_EQ(after.rounds, 10);
  EXPECT_EQ(after.last_round, 9);
  EXPECT_DOUBLE_EQ(after.epsilon, before.epsilon);
  EXPECT_DOUBLE_EQ(after.epsilon_unamplified, before.epsilon_unamplified);
  // The restarted daemon re-charges the round it was in: a no-op.
  ASSERT_TRUE(reopened->Charge(9, mechanism_).ok());
  EXPECT_DOUBLE_EQ(reopened->Spent().epsilon, before.epsilon);
  // ... but not with other parameters, and not an older, uncharged round.
  StepMechanism other = mechanism_;
  other.noise_multipliers = {1.0, 1.0};
  EXPECT_EQ(reopened->Charge(9, other).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(reopened->Charge(12, mechanism_).ok());
  EXPECT_EQ(reopened->Charge(11, mechanism_).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(reopened->Spent().rounds, 11);
  EXPECT_GT(reopened->Spent().epsilon, before.epsilon);
}

// The marginal release with label pairs: Gaussians and a randomized response in one
// unsampled charge. The randomized response is written in its own field (a charge
// without one has none) and survives a restart.
TEST_F(LedgerTest, RandomizedResponseChargesReplay) {
  StepMechanism release{{4.0, 4.0, 4.0}, 1.0, Sampler::kWithoutReplacement};
  release.randomized_responses = {0.98};
  config_.epsilon_budget = 10.0;
  PrivacySpent before;
  {
    auto ledger = *PrivacyLedger::Open(path_, config_);
    ASSERT_TRUE(ledger->Charge(0, release).ok());
    ASSERT_TRUE(ledger->Charge(1, mechanism_, 100).ok());
    before = ledger->Spent();
  }
  RdpAccountant expected(Sampler::kWithoutReplacement);
  ASSERT_TRUE(expected.Compose(release).ok());
  ASSERT_TRUE(expected.Compose(mechanism_, 100).ok());
  EXPECT_NEAR(before.epsilon, expected.GetEpsilon(1e-5, Conversion::kImproved)->epsilon, 1e-12);
  EXPECT_NE(ReadAll().find("\trr=0.9799"), std::string::npos) << ReadAll();
  auto reopened = *PrivacyLedger::Open(path_, config_);
  EXPECT_DOUBLE_EQ(reopened->Spent().epsilon, before.epsilon);
  ASSERT_TRUE(reopened->Charge(0, release).ok());  // the same charge again: a no-op
  StepMechanism gaussians_only = release;
  gaussians_only.randomized_responses.clear();
  EXPECT_EQ(reopened->Charge(0, gaussians_only).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(LedgerTest, RefusesAnotherRunsLedger) {
  { ASSERT_TRUE(PrivacyLedger::Open(path_, config_).ok()); }
  LedgerConfig other = config_;
  other.run_id = "run-43";
  EXPECT_EQ(PrivacyLedger::Open(path_, other).status().code(),
            absl::StatusCode::kFailedPrecondition);
  other = config_;
  other.delta = 1e-6;
  EXPECT_EQ(PrivacyLedger::Open(path_, other).status().code(),
            absl::StatusCode::kFailedPrecondition);
  other = config_;
  other.conversion = Conversion::kClassic;
  EXPECT_EQ(PrivacyLedger::Open(path_, other).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(LedgerTest, TornLastLineIsDroppedAndAppendsContinue) {
  {
    auto ledger = *PrivacyLedger::Open(path_, config_);
    for (int round = 0; round < 5; ++round) ASSERT_TRUE(ledger->Charge(round, mechanism_).ok());
  }
  const std::string intact = ReadAll();
  // Simulate a crash in the middle of appending round 5.
  {
    std::ofstream out(path_, std::ios::app);
    out << "charge\tround=5\tsteps=1\tq=0.0014";
  }
  auto ledger = PrivacyLedger::Open(path_, config_);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ((*ledger)->Spent().rounds, 5);
  EXPECT_FALSE((*ledger)->IsCharged(5));
  EXPECT_EQ(ReadAll(), intact);  // truncated back to the last complete line
  ASSERT_TRUE((*ledger)->Charge(5, mechanism_).ok());
  ledger->reset();
  auto again = *PrivacyLedger::Open(path_, config_);
  EXPECT_EQ(again->Spent().rounds, 6);
}

TEST_F(LedgerTest, TornHeaderStartsAFreshLedger) {
  { std::ofstream(path_) << "vfsynth-privacy-led"; }
  auto ledger = PrivacyLedger::Open(path_, config_);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ((*ledger)->Spent().rounds, 0);
  EXPECT_TRUE((*ledger)->Charge(0, mechanism_).ok());
}

TEST_F(LedgerTest, CorruptCompleteLineIsDataLoss) {
  {
    auto ledger = *PrivacyLedger::Open(path_, config_);
    for (int round = 0; round < 3; ++round) ASSERT_TRUE(ledger->Charge(round, mechanism_).ok());
  }
  std::string contents = ReadAll();
  // Someone "edits" round 1's noise multiplier upwards.
  const size_t pos = contents.find("round=1\t");
  ASSERT_NE(pos, std::string::npos);
  const size_t z = contents.find("z=1.6", pos);
  ASSERT_NE(z, std::string::npos);
  contents.replace(z, 5, "z=9.6");
  { std::ofstream(path_, std::ios::trunc) << contents; }
  EXPECT_EQ(PrivacyLedger::Open(path_, config_).status().code(), absl::StatusCode::kDataLoss);
}

// The id a checkpoint names its ledger by: drawn at creation, kept across reopens,
// another for another ledger.
TEST_F(LedgerTest, LedgerIdIsDrawnAtCreationAndKept) {
  std::string id;
  {
    auto ledger = *PrivacyLedger::Open(path_, config_);
    id = ledger->id();
    EXPECT_EQ(id.size(), 64u);
    for (int round = 0; round < 3; ++round) ASSERT_TRUE(ledger->Charge(round, mechanism_).ok());
    EXPECT_EQ(ledger->charges(), 3);
  }
  auto reopened = *PrivacyLedger::OpenExisting(path_, config_);
  EXPECT_EQ(reopened->id(), id);
  EXPECT_EQ(reopened->charges(), 3);
  auto other = *PrivacyLedger::Open((dir_ / "other.ledger").string(), config_);
  EXPECT_NE(other->id(), id);
}

// A resumed run's ledger must be there: never a new, empty one.
TEST_F(LedgerTest, OpenExistingRefusesAMissingOrEmptyLedger) {
  absl::Status status = PrivacyLedger::OpenExisting(path_, config_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "privacy ledger " + path_ + " does not exist");
  EXPECT_FALSE(std::filesystem::exists(path_));
  {
    std::ofstream(path_) << "vfsynth-privacy-led";
  }  // a torn header: nothing was ever charged to it
  status = PrivacyLedger::OpenExisting(path_, config_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("has no header"));
}

TEST_F(LedgerTest, AnotherFormatVersionIsRefusedWithOneMessage) {
  { ASSERT_TRUE(PrivacyLedger::Open(path_, config_).ok()); }
  std::string header = ReadAll();
  header = header.substr(0, header.rfind('\t'));  // without its checksum
  const size_t version = header.find("version=4");
  ASSERT_NE(version, std::string::npos);
  header.replace(version, 9, "version=3");
  {
    std::ofstream(path_, std::ios::trunc)
        << absl::StrCat(header, "\tfnv64=", absl::Hex(Fnv1a64(header), absl::kZeroPad16), "\n");
  }
  for (const auto& open : {PrivacyLedger::Open, PrivacyLedger::OpenExisting}) {
    const absl::Status status = open(path_, config_).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(
        status.message(),
        ::testing::AllOf(::testing::HasSubstr(path_),
                         ::testing::HasSubstr("has format version 3; this build reads version 4")));
  }
}

// A line's checksum recomputed after an edit, as an operator editing the file could.
std::string Resealed(const std::string& line) {
  const std::string body = line.substr(0, line.rfind("\tfnv64="));
  return absl::StrCat(body, "\tfnv64=", absl::Hex(Fnv1a64(body), absl::kZeroPad16));
}

// One charge line deleted from the middle: a resume would under-count; the chain breaks
// at the line after it.
TEST_F(LedgerTest, ADeletedChargeIsRefusedNamingTheFileAndTheLine) {
  WriteCharges(5);
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 6u);  // the header, then rounds 0 .. 4
  lines.erase(lines.begin() + 3);  // round 2, line 4
  WriteLines(lines);
  ExpectRefused("line 4 does not follow line 3");
}

TEST_F(LedgerTest, ADuplicatedOrReorderedLineIsRefused) {
  WriteCharges(4);
  const std::vector<std::string> lines = Lines();
  std::vector<std::string> duplicated = lines;
  duplicated.insert(duplicated.begin() + 4, lines[2]);  // round 1 again after round 2
  WriteLines(duplicated);
  ExpectRefused("line 5 does not follow line 4");
  std::vector<std::string> reordered = lines;
  std::swap(reordered[2], reordered[3]);
  WriteLines(reordered);
  ExpectRefused("line 3 does not follow line 2");
}

// An edit with its checksum recomputed: the recorded epsilon is not what the charges
// give, and any edit of a line before the last breaks the chain at the next.
TEST_F(LedgerTest, AnEditedEpsilonIsRefusedEvenWithItsChecksumRecomputed) {
  WriteCharges(3);
  const std::vector<std::string> lines = Lines();
  auto edited = [&](size_t index, const std::string& key) {
    std::vector<std::string> copy = lines;
    const size_t at = copy[index].find("\t" + key + "=") + key.size() + 2;
    copy[index].replace(at, copy[index].find('\t', at) - at, "0.001");
    copy[index] = Resealed(copy[index]);
    return copy;
  };
  WriteLines(edited(2, "epsilon"));
  ExpectRefused("line 3: records epsilon 0.001");
  WriteLines(edited(3, "epsilon"));
  ExpectRefused("line 4: records epsilon 0.001");
  WriteLines(edited(2, "order"));  // a field no check recomputes
  ExpectRefused("line 4 does not follow line 3");
  // The same for the mechanism: a larger z on the last line.
  std::vector<std::string> noisier = lines;
  const size_t z = noisier[3].find("\tz=1.6");
  ASSERT_NE(z, std::string::npos);
  noisier[3].replace(z, 6, "\tz=9.6");
  noisier[3] = Resealed(noisier[3]);
  WriteLines(noisier);
  ExpectRefused("line 4: records epsilon");
}

// The last complete line removed leaves a chain that verifies: the checkpoint's record
// count catches it (CheckLedgerBinding); a torn one is dropped as before.
TEST_F(LedgerTest, AnAppendAfterATornLineChainsToTheLastCompleteLine) {
  WriteCharges(2);
  { std::ofstream(path_, std::ios::app) << "charge\tround=2\tsteps=1"; }
  {
    auto ledger = *PrivacyLedger::Open(path_, config_);
    ASSERT_TRUE(ledger->Charge(2, mechanism_).ok());
  }
  auto reopened = PrivacyLedger::OpenExisting(path_, config_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->charges(), 3);
}

// A device, a directory or a pipe holds no charge (and /dev/full would be read forever).
TEST_F(LedgerTest, ALedgerThatIsNotARegularFileIsRefused) {
  const std::string fifo = (dir_ / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {std::string("/dev/full"), fifo}) {
    const absl::Status status = PrivacyLedger::Open(path, config_).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(status.message(),
                ::testing::HasSubstr("privacy ledger " + path + " is not a regular file"));
  }
  const absl::Status directory = PrivacyLedger::Open(dir_.string(), config_).status();
  EXPECT_FALSE(directory.ok());
  EXPECT_THAT(directory.message(), ::testing::HasSubstr(dir_.string()));
}

// A write the filesystem refuses (here the file-size limit, as a full disk would) fails
// the charge naming the file and the OS error; nothing is counted or left in the file,
// and the ledger goes on once the filesystem takes writes again.
TEST_F(LedgerTest, AFailedWriteChargesNothingAndNamesTheFileAndTheError) {
  auto ledger = *PrivacyLedger::Open(path_, config_);
  ASSERT_TRUE(ledger->Charge(0, mechanism_).ok());
  const std::string before = ReadAll();
  rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* const previous = ::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = saved;
  limited.rlim_cur = before.size() + 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  const absl::Status failed = ledger->Charge(1, mechanism_);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ::signal(SIGXFSZ, previous);
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), ::testing::AllOf(
                                    ::testing::HasSubstr("privacy ledger " + path_),
                                    ::testing::HasSubstr("File too large")));
  EXPECT_FALSE(ledger->IsCharged(1));
  EXPECT_EQ(ReadAll(), before);
  ASSERT_TRUE(ledger->Charge(1, mechanism_).ok());
  ledger.reset();
  EXPECT_EQ((*PrivacyLedger::OpenExisting(path_, config_))->charges(), 2);
}

// `vfsynth ledger show`'s reading: a ledger its daemon holds is read as it is, torn
// last line included, without a lock; a broken one shows the charges before the break.
TEST_F(LedgerTest, InspectReadsWithoutChangingAndShowsWhereTheChainBreaks) {
  auto held = *PrivacyLedger::Open(path_, config_);
  for (int round = 0; round < 3; ++round) ASSERT_TRUE(held->Charge(round, mechanism_).ok());
  ASSERT_TRUE(held->RecordRelease(2, "update_sum_2", "abcd").ok());
  { std::ofstream(path_, std::ios::app) << "charge\tround=3"; }
  const std::string torn = ReadAll();
  absl::StatusOr<LedgerInspection> inspection = PrivacyLedger::Inspect(path_);
  ASSERT_TRUE(inspection.ok()) << inspection.status();
  EXPECT_TRUE(inspection->verification.ok()) << inspection->verification;
  EXPECT_EQ(inspection->torn_bytes, 14);
  EXPECT_EQ(inspection->ledger->id(), held->id());
  EXPECT_EQ(inspection->ledger->config().run_id, "run-42");
  const std::vector<ChargeEntry> charges = inspection->ledger->ChargeHistory();
  ASSERT_EQ(charges.size(), 3u);
  EXPECT_DOUBLE_EQ(charges[2].epsilon, held->Spent().epsilon);
  EXPECT_EQ(inspection->ledger->Releases().size(), 1u);
  EXPECT_EQ(ReadAll(), torn);
  absl::StatusOr<LedgerReport> report = ReportLedger(path_);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->verification.ok());
  EXPECT_THAT(report->text,
              ::testing::AllOf(::testing::HasSubstr("run run-42, ledger id " + held->id()),
                               ::testing::HasSubstr("  round 2  steps 1  q "),
                               ::testing::HasSubstr("update_sum_2  sha256 abcd"),
                               ::testing::HasSubstr("over 3 charges (3 steps)"),
                               ::testing::HasSubstr("torn last line (14 bytes"),
                               ::testing::HasSubstr("\nverified: ")));
  held.reset();

  std::vector<std::string> lines = Lines();
  lines.erase(lines.begin() + 2);  // round 1
  WriteLines(lines);
  inspection = PrivacyLedger::Inspect(path_);
  ASSERT_TRUE(inspection.ok()) << inspection.status();
  EXPECT_EQ(inspection->verification.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(inspection->ledger->charges(), 1);
  report = ReportLedger(path_);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->text, ::testing::HasSubstr("NOT VERIFIED (the records above are those "
                                                 "before the break): privacy ledger " +
                                                 path_ + " line 3 does not follow line 2"));
}

// A kept release is recorded under the charge that covers it, once, with its digest;
// another digest under the same name is refused, and the record survives a restart
// (a torn record is dropped like a torn charge).
TEST_F(LedgerTest, ReleasesAreRecordedOnceUnderTheirCharge) {
  {
    auto ledger = *PrivacyLedger::Open(path_, config_);
    EXPECT_EQ(ledger->RecordRelease(0, "labels.release", "aaaa").code(),
              absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(ledger->Charge(0, mechanism_).ok());
    ASSERT_TRUE(ledger->RecordRelease(0, "labels.release", "aaaa").ok());
    const std::string once = ReadAll();
    ASSERT_TRUE(ledger->RecordRelease(0, "labels.release", "aaaa").ok());
    EXPECT_EQ(ReadAll(), once);
    const absl::Status other = ledger->RecordRelease(0, "labels.release", "bbbb");
    EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(other.message(), ::testing::HasSubstr("with SHA-256 aaaa, not bbbb"));
    EXPECT_EQ(ledger->RecordRelease(0, "has\ttab", "aaaa").code(),
              absl::StatusCode::kInvalidArgument);
    ASSERT_TRUE(ledger->Charge(1, mechanism_).ok());
    EXPECT_THAT(ReadAll(), ::testing::HasSubstr(
                               "\nrelease\tround=0\tname=labels.release\tsha256=aaaa\tprev="));
  }
  { std::ofstream(path_, std::ios::app) << "release\tround=1\tname=marginals\tsha"; }
  auto reopened = *PrivacyLedger::OpenExisting(path_, config_);
  EXPECT_EQ(reopened->ReleaseDigest("labels.release"), "aaaa");
  EXPECT_EQ(reopened->ReleaseDigest("marginals"), std::nullopt);
  EXPECT_EQ(reopened->charges(), 2);
  EXPECT_EQ(reopened->RecordRelease(0, "labels.release", "bbbb").code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(LedgerTest, RejectsBadConfigAndMechanisms) {
  LedgerConfig bad = config_;
  bad.run_id = "has\ttab";
  EXPECT_EQ(PrivacyLedger::Open(path_, bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = config_;
  bad.epsilon_budget = 0;
  EXPECT_EQ(PrivacyLedger::Open(path_, bad).status().code(), absl::StatusCode::kInvalidArgument);
  auto ledger = *PrivacyLedger::Open(path_, config_);
  EXPECT_EQ(ledger->Charge(0, {{}, 0.01, Sampler::kWithoutReplacement}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ledger->Charge(0, {{1.0}, 0.01, Sampler::kPoisson}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ledger->Charge(0, mechanism_, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ledger->Spent().rounds, 0);
}

}  // namespace
}  // namespace vfsynth::privacy
