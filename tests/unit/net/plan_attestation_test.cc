// The parties' signed statements of their plan and secrets, relayed by the curator: what
// a party accepts before it releases anything, and every way a curator or another party
// could make it accept what another party did not state.
#include "client/core/plan_attestation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/core/list_identity.h"
#include "tests/unit/secure/test_certs.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

constexpr char kRun[] = "attest-run";
constexpr char kSampling[] = "sampling-secret-0123456789abcdef-0123456789";
constexpr char kAlignment[] = "alignment-key-0123456789abcdef-0123456789ab";
const std::vector<std::string> kRoster = {"hospital", "insurer", "bank"};

// Parties of the run's CA ("run") and one of another CA ("other") from deploy/gen-certs.sh.
class PlanAttestationTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ =
        new std::string(absl::StrCat(::testing::TempDir(), "/plan_attestation_test_", ::getpid()));
    ASSERT_TRUE(secure::testing::GenerateTestCerts(*dir_ + "/run", "hospital insurer bank"));
    ASSERT_TRUE(secure::testing::GenerateTestCerts(*dir_ + "/other", "bank"));
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete dir_;
  }

 protected:
  // `party`'s identity: its key and certificate under CA `ca`, checking against the run's CA.
  static ListIdentity Identity(const std::string& party, const std::string& ca = "run") {
    v1::TlsConfig tls;
    tls.set_ca(*dir_ + "/run/ca.crt");
    tls.set_cert(absl::StrCat(*dir_, "/", ca, "/", party, ".crt"));
    tls.set_key(absl::StrCat(*dir_, "/", ca, "/", party, ".key"));
    absl::StatusOr<ListIdentity> identity = LoadListIdentity(tls);
    EXPECT_TRUE(identity.ok()) << identity.status();
    return *std::move(identity);
  }
  static v1::PrivacyPlan Plan(int64_t rounds = 3) {
    v1::PrivacyPlan plan;
    plan.set_rounds(rounds);
    plan.set_noise_multiplier(1.1);
    return plan;
  }
  // `party`'s attestation, stated for `run` and `plan`.
  static PlanAttestation Stated(const std::string& party, ListIdentity identity,
                                std::optional<SharedSecrets> secrets = SharedSecrets{kSampling,
                                                                                     kAlignment},
                                const std::string& run = kRun,
                                const v1::PrivacyPlan& plan = Plan(),
                                const std::string& nonce = std::string(64, 'a')) {
    PlanAttestation attestation(party, std::move(identity), std::move(secrets));
    const absl::Status stated = attestation.State(run, nonce, plan);
    EXPECT_TRUE(stated.ok()) << stated;
    return attestation;
  }
  // The curator's relay of `statements`, (party, statement) in order.
  static v1::AttestPlanResponse Relay(
      const std::vector<std::pair<std::string, std::string>>& statements) {
    v1::AttestPlanResponse response;
    for (const auto& [party, statement] : statements) {
      v1::PartyStatement* relayed = response.add_statements();
      relayed->set_party(party);
      relayed->set_statement(statement);
    }
    return response;
  }
  // What hospital (signed, shared secrets) makes of the curator relaying `statements`.
  static absl::Status HospitalChecks(
      const std::vector<std::pair<std::string, std::string>>& statements) {
    return Stated("hospital", Identity("hospital"))
        .CheckOthers(kRoster, Relay(statements).statements());
  }
  // ... and of the curator relaying insurer's statement and `bank` as bank's.
  static absl::Status HospitalChecksBank(const std::string& bank) {
    return HospitalChecks({{"insurer", Statement("insurer")}, {"bank", bank}});
  }
  static std::string Statement(const std::string& party) {
    return Stated(party, Identity(party)).statement();
  }

  static std::string* dir_;
};

std::string* PlanAttestationTest::dir_ = nullptr;

// Hospital refused bank's statement as not signed by bank for this run.
void ExpectBanksSignatureRefused(const absl::Status& status) {
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(status.message(), HasSubstr("party 'bank''s is refused"));
}

TEST_F(PlanAttestationTest, AcceptsEveryPartysSignedStatementOfTheSamePlanAndSecrets) {
  const std::vector<std::pair<std::string, std::string>> all = {{"hospital", Statement("hospital")},
                                                                {"insurer", Statement("insurer")},
                                                                {"bank", Statement("bank")}};
  for (const std::string& party : kRoster) {
    EXPECT_TRUE(Stated(party, Identity(party)).CheckOthers(kRoster, Relay(all).statements()).ok())
        << party;
  }
}

TEST_F(PlanAttestationTest, RefusesAForgedPeerSignature) {
  // Bank's statement with one byte of its signed content altered (the curator's forgery).
  std::string forged = Statement("bank");
  forged.back() ^= 0x01;
  const absl::Status refused = HospitalChecksBank(forged);
  ExpectBanksSignatureRefused(refused);
  EXPECT_THAT(refused.message(), HasSubstr("forged or altered"));
}

TEST_F(PlanAttestationTest, RefusesAStatementSignedUnderAnotherCaOrByAnotherParty) {
  // A "bank" certificate of another CA: whoever holds that CA could make one.
  const std::string other_ca = Stated("bank", Identity("bank", "other")).statement();
  EXPECT_THAT(HospitalChecksBank(other_ca).message(), HasSubstr("does not chain to the run's CA"));
  // Insurer's genuine statement relayed as bank's.
  ExpectBanksSignatureRefused(HospitalChecksBank(Statement("insurer")));
}

TEST_F(PlanAttestationTest, RefusesAStatementOfAnotherRun) {
  const std::string replayed =
      Stated("bank", Identity("bank"), SharedSecrets{kSampling, kAlignment}, "an-earlier-run")
          .statement();
  ExpectBanksSignatureRefused(HospitalChecksBank(replayed));
}

// The same run id started again: a statement of the earlier start is a replay.
TEST_F(PlanAttestationTest, RefusesAStatementOfAnotherStartOfTheRun) {
  const std::string replayed = Stated("bank", Identity("bank"), SharedSecrets{kSampling, kAlignment},
                                      kRun, Plan(), std::string(64, 'b'))
                                   .statement();
  const absl::Status refused = HospitalChecksBank(replayed);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("another start of run"));
}

TEST_F(PlanAttestationTest, NamesAPartyThatSignedAnotherPlan) {
  const std::string other_plan =
      Stated("bank", Identity("bank"), SharedSecrets{kSampling, kAlignment}, kRun,
             Plan(/*rounds=*/30))
          .statement();
  const absl::Status refused = HospitalChecksBank(other_plan);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("party 'bank' signed privacy plan"));
  EXPECT_THAT(refused.message(), HasSubstr("the curator admitted a party with other settings"));
}

TEST_F(PlanAttestationTest, NamesAPartyWithAnotherSamplingSecretOrAlignmentKey) {
  const std::string sampling =
      Stated("bank", Identity("bank"),
             SharedSecrets{"another-sampling-secret-0123456789abcdef", kAlignment})
          .statement();
  const absl::Status refused = HospitalChecksBank(sampling);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(),
              HasSubstr("party 'bank' holds another sampling_secret than party 'hospital'"));
  EXPECT_THAT(refused.message(), HasSubstr("give every party the same secrets file"));

  const std::string alignment =
      Stated("insurer", Identity("insurer"),
             SharedSecrets{kSampling, "another-alignment-key-0123456789abcdef"})
          .statement();
  EXPECT_THAT(HospitalChecks({{"insurer", alignment}, {"bank", Statement("bank")}}).message(),
              HasSubstr("party 'insurer' holds another alignment_key than party 'hospital'"));
}

TEST_F(PlanAttestationTest, RefusesAMissingPartyAStrangerAndADuplicate) {
  EXPECT_THAT(HospitalChecks({{"insurer", Statement("insurer")}}).message(),
              HasSubstr("no plan statement of party 'bank'"));
  EXPECT_THAT(HospitalChecksBank("").message(), HasSubstr("party 'bank''s is refused"));
  EXPECT_THAT(HospitalChecks({{"insurer", Statement("insurer")},
                              {"bank", Statement("bank")},
                              {"mallory", Statement("bank")}})
                  .message(),
              HasSubstr("'mallory', which is not a party of run"));
  EXPECT_THAT(HospitalChecks({{"insurer", Statement("insurer")},
                              {"bank", Statement("bank")},
                              {"bank", Statement("bank")}})
                  .message(),
              HasSubstr("two plan statements of party 'bank'"));
}

TEST_F(PlanAttestationTest, HorizontalPartiesAttestThePlanAlone) {
  auto stated = [](const std::string& party, const v1::PrivacyPlan& plan) {
    return Stated(party, Identity(party), std::nullopt, kRun, plan);
  };
  const v1::AttestPlanResponse same = Relay({{"insurer", stated("insurer", Plan()).statement()},
                                             {"bank", stated("bank", Plan()).statement()}});
  EXPECT_TRUE(stated("hospital", Plan()).CheckOthers(kRoster, same.statements()).ok());
  const v1::AttestPlanResponse other = Relay({{"insurer", stated("insurer", Plan()).statement()},
                                              {"bank", stated("bank", Plan(9)).statement()}});
  EXPECT_THAT(stated("hospital", Plan()).CheckOthers(kRoster, other.statements()).message(),
              HasSubstr("party 'bank' signed privacy plan"));
}

// A plaintext loopback config has no identity to sign with: the statements still carry
// the check values, so differing secrets files are still found.
TEST_F(PlanAttestationTest, UnsignedStatementsStillFindDifferingSecrets) {
  const std::string insurer = Stated("insurer", ListIdentity()).statement();
  const std::string bank =
      Stated("bank", ListIdentity(),
             SharedSecrets{"another-sampling-secret-0123456789abcdef", kAlignment})
          .statement();
  EXPECT_THAT(Stated("hospital", ListIdentity())
                  .CheckOthers(kRoster, Relay({{"insurer", insurer}, {"bank", bank}}).statements())
                  .message(),
              HasSubstr("party 'bank' holds another sampling_secret"));
  EXPECT_THAT(
      Stated("hospital", ListIdentity())
          .CheckOthers(kRoster, Relay({{"insurer", insurer}, {"bank", insurer}}).statements())
          .message(),
      HasSubstr("relayed as party 'bank''s is party 'insurer''s"));
}

TEST(PlanStatementTest, DecodesWhatItEncodesAndRefusesTruncation) {
  const PlanStatement statement{"run", "start", "bank", "digest", "s", "a"};
  const std::string encoded = EncodePlanStatement(statement);
  absl::StatusOr<PlanStatement> decoded = DecodePlanStatement(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->run_nonce, "start");
  EXPECT_EQ(decoded->party, "bank");
  EXPECT_EQ(decoded->alignment_check, "a");
  EXPECT_FALSE(DecodePlanStatement(encoded.substr(0, encoded.size() - 1)).ok());
  EXPECT_FALSE(DecodePlanStatement(encoded + "x").ok());
}

}  // namespace
}  // namespace vfsynth
