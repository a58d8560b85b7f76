// Runs the built `vfsynth audit`: bad flags are refused before any training, and a
// tiny strict audit with a canary reports the claim beside the attack.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "gtest/gtest.h"

namespace vfsynth {
namespace {

namespace fs = std::filesystem;

// The number after "key": in a JSON text, or NaN.
double NumberField(const std::string& json, const std::string& key) {
  const size_t at = json.find(absl::StrCat("\"", key, "\": "));
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + key.size() + 4, nullptr);
}

class AuditCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = (fs::temp_directory_path() / absl::StrCat("vfsynth_audit_command_", getpid())).string();
  }
  void TearDown() override { fs::remove_all(out_); }

  struct Result {
    int exit_code = -1;
    std::string log;  // stdout and stderr
  };

  // `vfsynth audit` on Adult with `flags`.
  Result Audit(const std::string& flags) const {
    const std::string log = out_ + ".log";
    const int status =
        std::system(absl::StrCat(VFSYNTH_BIN_DIR, "/vfsynth audit --real ", VFSYNTH_DATASETS_DIR,
                                 "/adult.csv --schema ", VFSYNTH_SOURCE_DIR,
                                 "/deploy/schemas/adult.schema.json --out ", out_, " ", flags,
                                 " > ", log, " 2>&1")
                        .c_str());
    Result result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(log).value_or("")};
    fs::remove(log);
    return result;
  }

  std::string out_;
};

TEST_F(AuditCommandTest, RefusesFlagsThatDoNotFit) {
  const std::pair<std::string, std::string> cases[] = {
      {"--privacy bogus --epsilon 1", "privacy mode 'bogus' is not one of"},
      {"--privacy strict", "--privacy strict needs --epsilon E > 0"},
      {"--privacy dpsgd --epsilon -2", "--privacy dpsgd needs --epsilon E > 0"},
      {"--epsilon 1", "mode none trains without DP"},
      {"--audit-canary --audit-target-row 3", "--audit-canary and --audit-target-row"},
      {"--audit-rows 40", "fewer than the shadow models' batch size 64"},
  };
  for (const auto& [flags, message] : cases) {
    const Result r = Audit(flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.log;
    EXPECT_NE(r.log.find(message), std::string::npos) << flags << "\n" << r.log;
    EXPECT_EQ(r.log.find("shadow pair"), std::string::npos) << flags << ": trained before refusing";
  }
}

TEST_F(AuditCommandTest, StrictAuditWithCanaryReportsTheClaimBesideTheAttack) {
  const Result r = Audit(
      "--privacy strict --epsilon 2 --audit-canary --audit-models 2 --audit-rows 100 --rounds 2");
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.log.find("privacy strict, claimed epsilon 2.000; empirical epsilon lower bound"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("target canary (row 100)"), std::string::npos) << r.log;
  // 2 models per side: one held-out set each, which no attack can turn into a bound.
  EXPECT_NE(r.log.find("no attack can show an epsilon lower bound above 0.000"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("of at most 0.000 attainable"), std::string::npos) << r.log;
  const auto json = ReadFile(out_ + "/audit.json");
  ASSERT_TRUE(json.ok()) << json.status();
  for (const char* field : {"\"privacy_mode\": \"strict\"", "\"differentially_private\": true",
                            "\"target\": \"canary\"", "\"training_rows\": 101",
                            "\"epsilon_lower_bound\"", "\"attack_auc\""}) {
    EXPECT_NE(json->find(field), std::string::npos) << field << " not in\n" << *json;
  }
  EXPECT_NEAR(NumberField(*json, "claimed_epsilon"), 2.0, 1e-3) << *json;
}

}  // namespace
}  // namespace vfsynth
