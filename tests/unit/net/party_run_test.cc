// What a party keeps of its run whatever the topology: the first registration fixes the
// run, a later one must name the same run and settings.
#include "client/core/party_run.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/core/party_protocol.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

TEST(PartyRunTest, TheFirstRegistrationFixesTheRunAndALaterOneMustMatchIt) {
  PartyRun run;
  auto first = run.Join("run-1", "settings", "start-1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  EXPECT_EQ(run.id(), "run-1");
  EXPECT_EQ(run.settings_digest(), "settings");

  auto again = run.Join("run-1", "settings", "start-1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(*again);

  const absl::Status other_settings = run.Join("run-1", "changed", "start-1").status();
  EXPECT_EQ(other_settings.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other_settings.message(), HasSubstr("with other settings than run 'run-1'"));
  const absl::Status other_run = run.Join("run-2", "settings", "start-1").status();
  EXPECT_EQ(other_run.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other_run.message(), HasSubstr("runs 'run-2' with another run id"));
  EXPECT_EQ(run.id(), "run-1");
}

TEST(PartyRunTest, ACuratorStartedAgainUnderTheSameRunIdIsRefusedAfterAReconnect) {
  PartyRun run;
  ASSERT_TRUE(run.Join("run-1", "settings", "start-1").ok());
  const absl::Status restarted = run.Join("run-1", "settings", "start-2").status();
  EXPECT_EQ(restarted.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(restarted.message(), HasSubstr("another start of run 'run-1'"));
  EXPECT_EQ(run.nonce(), "start-1");
}

// What a party tells the curator names its files, never where it keeps them.
TEST(PartyProtocolTest, ErrorsForTheCuratorCarryFileNamesNotLocalPaths) {
  EXPECT_EQ(WithoutLocalPaths("privacy ledger /srv/hospital/ledgers/run.ledger: cannot write "
                              "(No space left on device)"),
            "privacy ledger <local>/run.ledger: cannot write (No space left on device)");
  EXPECT_EQ(WithoutLocalPaths("kept answer '/home/x/own.answer' does not parse; see /var/log."),
            "kept answer '<local>/own.answer' does not parse; see <local>/log.");
  EXPECT_EQ(WithoutLocalPaths("ledger=/a/b.ledger, 3/4 of it"), "ledger=<local>/b.ledger, 3/4 of it");
  EXPECT_EQ(WithoutLocalPaths("no path here"), "no path here");
  const absl::Status reason = absl::FailedPreconditionError("cannot open /data/hospital.csv");
  EXPECT_EQ(RefusalOf("run", "hospital", reason).refusal(), "cannot open <local>/hospital.csv");
}

TEST(PartyRunTest, FinishedKeepsTheCuratorsVerdictAndWords) {
  PartyRun run;
  EXPECT_FALSE(run.finished());
  v1::Finished finished;
  finished.set_succeeded(false);
  finished.set_message("a party left");
  run.Finish(finished);
  EXPECT_TRUE(run.finished());
  EXPECT_FALSE(run.finish_succeeded());
  EXPECT_EQ(run.finish_message(), "a party left");
}

}  // namespace
}  // namespace vfsynth
