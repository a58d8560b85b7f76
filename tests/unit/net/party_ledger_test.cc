// OpenPartyLedger: the ledger's budgets are the plan's charges, in both of its views.
#include "client/core/party_ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

v1::PrivacyConfig Settings(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + ".ledger";
  std::filesystem::remove(path);
  v1::PrivacyConfig config;
  config.set_ledger(path);
  config.set_delta(1e-5);
  return config;
}

privacy::StepMechanism Gaussian(double sample_rate) {
  return {{1.0}, sample_rate, privacy::Sampler::kWithoutReplacement};
}

absl::StatusOr<std::unique_ptr<privacy::PrivacyLedger>> Open(const v1::PrivacyConfig& config,
                                                             const privacy::ChargedSteps& planned) {
  return OpenPartyLedger(config, "run", privacy::Sampler::kWithoutReplacement,
                         privacy::Conversion::kImproved, {planned}, /*resume=*/false);
}

// Charges rounds of `charged` steps until the ledger refuses one: that refusal.
absl::Status ChargeUntilRefused(privacy::PrivacyLedger& ledger,
                                const privacy::StepMechanism& charged) {
  for (int64_t round = 0; round < 100; ++round) {
    if (absl::Status status = ledger.Charge(round, charged); !status.ok()) return status;
  }
  return absl::OkStatus();
}

TEST(PartyLedgerTest, NoChargePastThePlannedStepsFitsTheBudget) {
  auto ledger = Open(Settings("planned"), {Gaussian(0.1), 3});
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ(ChargeUntilRefused(**ledger, Gaussian(0.1)).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*ledger)->charges(), 3);
}

// Steps sampled more thinly cost the curator less but the other parties (who know the
// batches) as much: the unamplified budget stops them where the plan's steps end.
TEST(PartyLedgerTest, TheBudgetAgainstOtherPartiesIsEnforcedAtEachCharge) {
  auto ledger = Open(Settings("unamplified"), {Gaussian(0.1), 3});
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  const absl::Status refused = ChargeUntilRefused(**ledger, Gaussian(0.001));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("no-amplification epsilon"));
  EXPECT_EQ((*ledger)->charges(), 3);
}

}  // namespace
}  // namespace vfsynth
