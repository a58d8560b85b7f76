// Runs the built `vfsynth privacy` and `vfsynth ledger` subcommands (docs/accounting.md's
// contract).
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/privacy/ledger.h"
#include "common/privacy/participation_ledger.h"
#include "gtest/gtest.h"

namespace {

struct Result {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

Result RunVfsynth(const std::string& args) {
  const std::string command = absl::StrCat(VFSYNTH_BIN_DIR, "/vfsynth ", args, " 2>&1");
  Result result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The number after "key=" in the output, or NaN.
double Value(const std::string& out, const std::string& key) {
  const size_t pos = out.find(key + "=");
  if (pos == std::string::npos) return std::nan("");
  const size_t start = pos + key.size() + 1;
  const size_t end = out.find_first_of(" \n", start);
  double value = std::nan("");
  if (!absl::SimpleAtod(out.substr(start, end - start), &value)) return std::nan("");
  return value;
}

// VFLGAN Adult: N = 42,960, B = 64, T = 40,260, δ = 1e-5 (seed-003 §4.4).
constexpr char kAdult[] = "--sample-rate 0.00148975791433892 --steps 40260 --delta 1e-5";

TEST(PrivacyCliTest, EpsilonClassicAndImproved) {
  Result r = RunVfsynth(
      absl::StrCat("privacy epsilon --noise-multiplier 0.6128 ", kAdult, " --conversion classic"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NEAR(Value(r.out, "epsilon"), 9.99, 1e-2) << r.out;
  EXPECT_EQ(Value(r.out, "order"), 3) << r.out;
  // Default conversion is improved, default sampler wor; underscores work too.
  r = RunVfsynth(absl::StrCat("privacy epsilon --noise_multiplier=0.8 ", kAdult));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NEAR(Value(r.out, "epsilon"), 4.46, 1e-2) << r.out;
}

TEST(PrivacyCliTest, EpsilonPoissonOpacusVector) {
  const Result r = RunVfsynth(
      "privacy epsilon --noise-multiplier 1.5 --sample-rate 0.04 --steps 2250 --delta 1e-5 "
      "--sampler poisson");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NEAR(Value(r.out, "epsilon"), 7.32911117143, 1e-6) << r.out;
  EXPECT_NEAR(Value(r.out, "order"), 3.9, 1e-9) << r.out;
}

TEST(PrivacyCliTest, ReleasesAndPerReleaseMultipliersAgree) {
  const Result same =
      RunVfsynth(absl::StrCat("privacy epsilon --noise-multiplier 1.2 --releases 3 ", kAdult));
  const Result listed =
      RunVfsynth(absl::StrCat("privacy epsilon --noise-multiplier 1.2,1.2,1.2 ", kAdult));
  ASSERT_EQ(same.exit_code, 0) << same.out;
  ASSERT_EQ(listed.exit_code, 0) << listed.out;
  EXPECT_EQ(Value(same.out, "epsilon"), Value(listed.out, "epsilon"));
  const Result single = RunVfsynth(absl::StrCat("privacy epsilon --noise-multiplier 1.2 ", kAdult));
  EXPECT_GT(Value(same.out, "epsilon"), Value(single.out, "epsilon"));
}

TEST(PrivacyCliTest, CalibrateInvertsEpsilon) {
  const Result r =
      RunVfsynth(absl::StrCat("privacy calibrate --epsilon 9.99 --conversion classic ", kAdult));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NEAR(Value(r.out, "noise_multiplier"), 0.6128, 2e-3) << r.out;
  EXPECT_LE(Value(r.out, "epsilon"), 9.99) << r.out;
}

TEST(PrivacyCliTest, BadInputFailsWithAClearMessage) {
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : {
           Case{absl::StrCat("privacy epsilon --noise-multiplier 1 --sample-rate 1.5 --steps 10 "
                             "--delta 1e-5"),
                "sample-rate"},
           Case{"privacy epsilon --noise-multiplier 1 --sample-rate 0 --steps 10 --delta 1e-5",
                "sample-rate"},
           Case{"privacy epsilon --noise-multiplier -1 --sample-rate 0.1 --steps 10 --delta 1e-5",
                "noise-multiplier"},
           Case{"privacy epsilon --noise-multiplier 1 --sample-rate 0.1 --steps 10 --delta 1",
                "delta"},
           Case{"privacy epsilon --noise-multiplier 1 --sample-rate 0.1 --steps 10 --delta 1e-5 "
                "--conversion pld",
                "conversion"},
           Case{"privacy calibrate --epsilon 0 --sample-rate 0.1 --steps 10 --delta 1e-5",
                "epsilon"},
           Case{"privacy frobnicate", "usage"},
       }) {
    const Result r = RunVfsynth(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(r.out.find("epsilon="), std::string::npos) << c.args << "\n" << r.out;
  }
}

// `plan` accounts for a whole run as the daemons do: calibrating for --epsilon and
// feeding the result back as --noise-multiplier gives that epsilon again.
TEST(PrivacyCliTest, PlanCalibratesEveryMode) {
  for (const char* mode : {"dpsgd", "strict", "gswgan", "pate"}) {
    const std::string shape =
        absl::StrCat("privacy plan --mode ", mode,
                     " --party-count 3 --records 32561 --batch-size 256 "
                     "--generator-rounds 60 --n-critic 5 --delta 1e-5 --shards 32");
    Result r = RunVfsynth(shape + " --epsilon 10");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NEAR(Value(r.out, "epsilon"), 10, 1e-3) << r.out;
    const double z = Value(r.out, "noise_multiplier");
    EXPECT_GT(z, 0) << r.out;
    EXPECT_LT(Value(r.out, "party_epsilon"), Value(r.out, "epsilon")) << r.out;
    r = RunVfsynth(absl::StrCat(shape, " --noise-multiplier ", z));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NEAR(Value(r.out, "epsilon"), 10, 1e-3) << r.out;
  }
  const std::string
      dpsgd =
          "privacy plan --mode dpsgd --party-count 3 --records 26048 --batch-size 256 "
          "--generator-rounds 10000 "
          "--n-critic 1 --delta 1e-5 --noise-multiplier 2.5995 --marginal-noise-multiplier "
          "3.1104987";  // a dpsgd run at ε = 10
  const Result even = RunVfsynth(dpsgd + " --shared-critic-budget-share 0.25");
  const Result split = RunVfsynth(dpsgd + " --shared-critic-budget-share 0.85");
  ASSERT_EQ(even.exit_code, 0) << even.out;
  ASSERT_EQ(split.exit_code, 0) << split.out;
  EXPECT_NEAR(Value(even.out, "epsilon"), 10, 1e-3) << even.out;
  EXPECT_NEAR(Value(split.out, "epsilon"), Value(even.out, "epsilon"), 1e-6) << split.out;
  EXPECT_NEAR(Value(even.out, "shared_critic_noise_multiplier"), 2.5995, 1e-6) << even.out;
  EXPECT_NEAR(Value(split.out, "shared_critic_noise_multiplier"), 1.409777, 1e-6) << split.out;
  EXPECT_NEAR(Value(split.out, "party_noise_multiplier"), 5.812659, 1e-6) << split.out;
  EXPECT_LT(Value(split.out, "party_epsilon"), Value(even.out, "party_epsilon")) << split.out;
  for (const char* wrong :
       {" --shared-critic-budget-share 1", " --shared-critic-budget-share 0.5 --mode strict"}) {
    const Result refused = RunVfsynth(dpsgd + wrong);
    EXPECT_EQ(refused.exit_code, 2) << refused.out;
    EXPECT_NE(refused.out.find("--shared-critic-budget-share"), std::string::npos) << refused.out;
  }
  // Label pairs: the labels and two more tables join the marginal release, so at the
  // same ε the critic steps get more noise; the flag needs the marginal release.
  const std::string strict =
      "privacy plan --mode strict --party-count 3 --records 26048 --batch-size 256 "
      "--generator-rounds 4000 "
      "--n-critic 1 --delta 1e-5 --epsilon 10 --marginal-noise-multiplier 4.0162";
  const Result plain = RunVfsynth(strict);
  const Result labelled = RunVfsynth(strict + " --label-epsilon 1.79");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_EQ(labelled.exit_code, 0) << labelled.out;
  EXPECT_NEAR(Value(labelled.out, "epsilon"), 10, 1e-3) << labelled.out;
  EXPECT_GT(Value(labelled.out, "noise_multiplier"), Value(plain.out, "noise_multiplier") + 0.05)
      << labelled.out;
  const Result no_marginals = RunVfsynth(
      "privacy plan --mode strict --party-count 3 --records 26048 --batch-size 256 "
      "--generator-rounds 4000 "
      "--n-critic 1 --delta 1e-5 --epsilon 10 --label-epsilon 1.79");
  EXPECT_EQ(no_marginals.exit_code, 2) << no_marginals.out;
  EXPECT_NE(no_marginals.out.find("--label-epsilon"), std::string::npos) << no_marginals.out;
  const Result bad = RunVfsynth(
      "privacy plan --mode pate --records 10 --batch-size 256 --generator-rounds 5 "
      "--epsilon 1 --delta 1e-5");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--records"), std::string::npos) << bad.out;
}

// Every observer gets its own figure, or "not_DP" where the mode gives it no guarantee;
// a budget against the parties is enforced.
TEST(PrivacyCliTest, PlanStatesTheEpsilonAgainstEveryObserver) {
  const std::string shape =
      "privacy plan --party-count 3 --records 26048 --batch-size 256 --generator-rounds 400 "
      "--n-critic 1 "
      "--delta 1e-5 --epsilon 10 --mode ";
  const Result strict = RunVfsynth(shape + "strict");
  ASSERT_EQ(strict.exit_code, 0) << strict.out;
  EXPECT_NEAR(Value(strict.out, "published_epsilon"), 10, 1e-3) << strict.out;
  EXPECT_NEAR(Value(strict.out, "curator_epsilon"), 10, 1e-3) << strict.out;
  const double parties = Value(strict.out, "other_party_epsilon");
  EXPECT_GT(parties, 20 * 10) << strict.out;
  EXPECT_EQ(Value(strict.out, "curator_with_party_epsilon"), parties) << strict.out;
  const Result dpsgd = RunVfsynth(shape + "dpsgd");
  ASSERT_EQ(dpsgd.exit_code, 0) << dpsgd.out;
  EXPECT_NEAR(Value(dpsgd.out, "published_epsilon"), 10, 1e-3) << dpsgd.out;
  for (const char* key : {" curator_epsilon=not_DP", " other_party_epsilon=not_DP",
                          " curator_with_party_epsilon=not_DP"}) {
    EXPECT_NE(dpsgd.out.find(key), std::string::npos) << key << "\n" << dpsgd.out;
  }
  const Result vflgan = RunVfsynth(shape + "vflgan");
  ASSERT_EQ(vflgan.exit_code, 0) << vflgan.out;
  EXPECT_NE(vflgan.out.find(" epsilon=not_DP"), std::string::npos) << vflgan.out;
  EXPECT_EQ(vflgan.out.find("party_epsilon=0"), std::string::npos) << vflgan.out;
  const Result capped =
      RunVfsynth(absl::StrCat(shape, "strict --epsilon-budget-against-parties ", parties * 0.9));
  EXPECT_NE(capped.exit_code, 0) << capped.out;
  EXPECT_NE(capped.out.find("privacy.epsilon_budget_against_parties"), std::string::npos)
      << capped.out;
  const Result kept =
      RunVfsynth(absl::StrCat(shape, "strict --epsilon-budget-against-parties ", parties * 1.1));
  EXPECT_EQ(kept.exit_code, 0) << kept.out;
}

// Measured marginals: planned from the columns the parties hold, the same ε against every
// observer, the histograms counted by kind; without the columns it is refused.
TEST(PrivacyCliTest, PlanMeasuredMarginalsFromTheParties) {
  const std::string shape =
      absl::StrCat("privacy plan --mode marginals --schema ", VFSYNTH_SOURCE_DIR,
                   "/deploy/schemas/adult.schema.json --parties ", VFSYNTH_SOURCE_DIR,
                   "/deploy/parties/adult-3.json --records 32561 --delta 1e-5 --epsilon 1");
  const Result plain = RunVfsynth(shape);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  for (const char* key : {"epsilon", "published_epsilon", "curator_epsilon", "other_party_epsilon",
                          "curator_with_party_epsilon"}) {
    EXPECT_NEAR(Value(plain.out, key), 1, 1e-3) << key << "\n" << plain.out;
  }
  EXPECT_EQ(Value(plain.out, "one_way"), 15) << plain.out;  // Adult's columns
  EXPECT_GT(Value(plain.out, "pairs_within_parties"), 0) << plain.out;
  EXPECT_GT(Value(plain.out, "pairs_across_parties"), 0) << plain.out;
  EXPECT_EQ(Value(plain.out, "label_pairs"), 0) << plain.out;
  EXPECT_EQ(Value(plain.out, "histograms"), Value(plain.out, "one_way") +
                                                Value(plain.out, "pairs_within_parties") +
                                                Value(plain.out, "pairs_across_parties"))
      << plain.out;
  EXPECT_GT(Value(plain.out, "sigma_one_way"), 1) << plain.out;
  EXPECT_GT(Value(plain.out, "sigma_pair"), 1) << plain.out;
  EXPECT_NE(plain.out.find("against other_party"), std::string::npos) << plain.out;

  // The label's pairs with every other column are always measured, at their own weight.
  const Result labelled = RunVfsynth(shape + " --label class");
  ASSERT_EQ(labelled.exit_code, 0) << labelled.out;
  EXPECT_NEAR(Value(labelled.out, "epsilon"), 1, 1e-3) << labelled.out;
  EXPECT_EQ(Value(labelled.out, "label_pairs"), 14) << labelled.out;
  EXPECT_EQ(Value(labelled.out, "histograms"), Value(labelled.out, "one_way") +
                                                   Value(labelled.out, "pairs_within_parties") +
                                                   Value(labelled.out, "pairs_across_parties") + 14)
      << labelled.out;
  EXPECT_GT(Value(labelled.out, "sigma_label_pair"), 1) << labelled.out;

  const Result no_label = RunVfsynth(shape + " --label salary");
  EXPECT_EQ(no_label.exit_code, 2) << no_label.out;
  EXPECT_NE(no_label.out.find("'salary'"), std::string::npos) << no_label.out;
  const Result no_columns =
      RunVfsynth("privacy plan --mode marginals --records 1000 --delta 1e-5 --epsilon 1");
  EXPECT_EQ(no_columns.exit_code, 2) << no_columns.out;
  EXPECT_NE(no_columns.out.find("--schema"), std::string::npos) << no_columns.out;
  EXPECT_NE(no_columns.out.find("--parties"), std::string::npos) << no_columns.out;
  const Result no_budget = RunVfsynth(absl::StrCat(shape, " --epsilon 0"));
  EXPECT_EQ(no_budget.exit_code, 2) << no_budget.out;
  EXPECT_NE(no_budget.out.find("--epsilon"), std::string::npos) << no_budget.out;
}

// Without --mode the plan is the default mode's, which it names with the reason.
TEST(PrivacyCliTest, PlanWithoutAModeNamesTheDefaultAndWhy) {
  const std::string columns =
      absl::StrCat(" --schema ", VFSYNTH_SOURCE_DIR, "/deploy/schemas/adult.schema.json --parties ",
                   VFSYNTH_SOURCE_DIR, "/deploy/parties/adult-3.json --records 32561 --delta 1e-5 ",
                   "--epsilon 1");
  const Result by_default = RunVfsynth("privacy plan" + columns);
  ASSERT_EQ(by_default.exit_code, 0) << by_default.out;
  EXPECT_NE(by_default.out.find("mode marginals (the default: the suite measures it best"),
            std::string::npos)
      << by_default.out;
  const Result named = RunVfsynth("privacy plan --mode marginals" + columns);
  ASSERT_EQ(named.exit_code, 0) << named.out;
  EXPECT_EQ(named.out.find("the default"), std::string::npos) << named.out;
  EXPECT_NE(by_default.out.find(named.out), std::string::npos)
      << by_default.out << "\n" << named.out;
}

// A schema of two categorical columns, 3 and 5 categories: 8 encoded columns, so the
// default autoencoder (64 hidden, 16 latent) has (8·64 + 64) + (64·16 + 16) + (16·64 + 64) +
// (64·8 + 8) = 3224 parameters.
std::string EightColumnSchema() {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     absl::StrCat("vfsynth_feasibility_", ::getpid(), ".json");
  std::ofstream(path) << R"({"name": "t", "columns": [
    {"name": "a", "type": "categorical", "categories": ["x", "y", "z"]},
    {"name": "b", "type": "categorical", "categories": ["1", "2", "3", "4", "5"]}]})";
  return path.string();
}

// `privacy plan --topology horizontal`: the plan and the feasibility line, whose verdict
// turns where the signal-to-noise bound reaches 20. With d = 3224, k = 161 and
// p = e^8·161 / (3063 + e^8·161), 2k/p = 324.055 and S = sqrt(R·p/(2k)) reaches 20 at
// R = 129,622.0 reports: 12,963 rounds of 10 users, so at 129,630 users (129,629 users
// make 12,962 rounds, S = 19.99984).
TEST(PrivacyCliTest, HorizontalPlanSaysWhetherTheLabelSurvivesOnEitherSideOfTheThreshold) {
  const std::string schema = EightColumnSchema();
  const std::string shape = absl::StrCat(
      "privacy plan --topology horizontal --mode signds --epsilon 8 --schema ", schema);
  const Result below = RunVfsynth(shape + " --users 129629");
  ASSERT_EQ(below.exit_code, 0) << below.out;
  EXPECT_EQ(Value(below.out, "parameters"), 3224) << below.out;
  EXPECT_EQ(Value(below.out, "rounds"), 12962) << below.out;
  EXPECT_NEAR(Value(below.out, "epsilon"), 8, 1e-9) << below.out;
  EXPECT_NE(below.out.find("feasibility (signds): per-coordinate signal-to-noise 19.9998 at 129,629 "
                           "users, below the 20 the label needs: expect the label lost; it "
                           "needs at least 129,630 users\n"),
            std::string::npos)
      << below.out;
  const Result at = RunVfsynth(shape + " --users 129630");
  ASSERT_EQ(at.exit_code, 0) << at.out;
  EXPECT_NE(at.out.find("at 129,630 users, at or above the 20 the label needs: the label is not "
                        "ruled out\n"),
            std::string::npos)
      << at.out;

  // dpfedavg at its defaults (1000 users a round), its multiplier calibrated to the budget.
  const Result averaged = RunVfsynth(absl::StrCat(
      "privacy plan --topology horizontal --mode dpfedavg --epsilon 8 --party-count 3 "
      "--users 26049 --schema ",
      schema));
  ASSERT_EQ(averaged.exit_code, 0) << averaged.out;
  const double z = Value(averaged.out, "noise_multiplier");
  EXPECT_GT(z, 0) << averaged.out;
  EXPECT_NE(averaged.out.find(absl::StrFormat(
                "feasibility (dpfedavg): noise-to-signal of the averaged update %.3g at 26,049 "
                "users",
                std::sqrt(3224.0) * z * 2 * std::sqrt(3.0) / 1000)),
            std::string::npos)
      << averaged.out;
  std::filesystem::remove(schema);
}

TEST(PrivacyCliTest, HorizontalPlanRefusesBadInputWithAClearMessage) {
  const std::string schema = EightColumnSchema();
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : {
           Case{"privacy plan --topology diagonal --epsilon 8", "--topology"},
           Case{"privacy plan --topology horizontal --epsilon 8 --users 100", "--schema"},
           Case{absl::StrCat("privacy plan --topology horizontal --epsilon 8 --users 0 --schema ",
                             schema),
                "--users"},
           Case{absl::StrCat("privacy plan --topology horizontal --mode dpfedavg --epsilon 8 "
                             "--users 500 --schema ",
                             schema),
                "users_per_round 1000 exceeds the run's 500 users"},
           Case{absl::StrCat("privacy plan --topology horizontal --mode strict --epsilon 8 "
                             "--users 500 --schema ",
                             schema),
                "--mode signds or dpfedavg"},
       }) {
    const Result r = RunVfsynth(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
  std::filesystem::remove(schema);
}

// `vfsynth ledger show`: what an auditor at a party reads. A ledger that verifies exits 0
// with its run, charges and totals; one missing a line exits 1 naming where it breaks.
TEST(LedgerCliTest, ShowPrintsTheChargesAndTotalsAndExitsOneWhenTheChainBreaks) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("vfsynth_ledger_cli_", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "bank.ledger").string();
  vfsynth::privacy::LedgerConfig config;
  config.run_id = "audit-run";
  config.epsilon_budget = 10;
  {
    auto ledger = vfsynth::privacy::PrivacyLedger::Open(path, config);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    const vfsynth::privacy::StepMechanism step{
        {1.1}, 0.004, vfsynth::privacy::Sampler::kWithoutReplacement};
    for (int round = 0; round < 3; ++round) ASSERT_TRUE((*ledger)->Charge(round, step).ok());
  }
  Result shown = RunVfsynth("ledger show " + path);
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  for (const char* expected :
       {"privacy ledger ", "run audit-run, ledger id ", "  round 2  steps 1  q 0.004  z 1.1",
        "totals at delta 1e-05 over 3 charges", "against the curator and outsiders: epsilon ",
        "against the other parties (no amplification): epsilon ", "\nverified: "}) {
    EXPECT_NE(shown.out.find(expected), std::string::npos) << expected << "\n" << shown.out;
  }

  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::string lines = text.str();
  const size_t second = lines.find("charge\tround=1\t");
  lines.erase(second, lines.find('\n', second) + 1 - second);
  std::ofstream(path, std::ios::trunc) << lines;
  shown = RunVfsynth("ledger show " + path);
  EXPECT_EQ(shown.exit_code, 1) << shown.out;
  EXPECT_NE(shown.out.find("NOT VERIFIED"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find(path + " line 3 does not follow line 2"), std::string::npos)
      << shown.out;

  const std::string participation = (dir / "users.ledger").string();
  {
    auto ledger = vfsynth::privacy::ParticipationLedger::Open(participation, {"audit-run", 2, 0.5});
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    ASSERT_TRUE((*ledger)->BindRound(0, "question").ok());
    ASSERT_TRUE((*ledger)->Take(0, "user-a").ok());
  }
  shown = RunVfsynth("ledger show " + participation);
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  EXPECT_NE(shown.out.find("users who answered: 1"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("epsilon 0.5 for the user with the most answers, of 1"),
            std::string::npos)
      << shown.out;

  std::ofstream(path, std::ios::trunc) << "id,age\n1,40\n";
  EXPECT_NE(RunVfsynth("ledger show " + path).exit_code, 0);
  EXPECT_EQ(RunVfsynth("ledger show").exit_code, 2);
  const Result missing = RunVfsynth("ledger show " + (dir / "none.ledger").string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("does not exist"), std::string::npos) << missing.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
