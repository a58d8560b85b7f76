#include "common/config/config.h"
#include "common/privacy/privacy_plan.h"
#include "common/privacy/rdp.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/proto_json.h"
#include "common/base/sha256.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ConfigTest, DefaultsMatchDesign) {
  v1::LocalRunConfig config;
  ASSERT_TRUE(ParseJsonInto(R"({"parties":[{"name":"a","data":"a.csv","schema":"a.json"}]})",
                            "c.json", &config)
                  .ok());
  ASSERT_TRUE(ResolveLocalRunConfig("/base", &config).ok());
  EXPECT_EQ(config.model().z_dim(), 64);
  EXPECT_EQ(config.model().feature_dim(), 128);
  EXPECT_EQ(config.model().feature_hidden_size(), 0);  // feat_k: one Linear + LeakyReLU
  EXPECT_EQ(config.model().shared_hidden_size(), 2);
  EXPECT_EQ(config.model().generator_hidden_size(), 2);
  EXPECT_EQ(config.model().experimental().pack(), 1);
  EXPECT_EQ(config.training().n_critic(), 1);
  EXPECT_EQ(config.training().rounds(), 10000);  // the curator's default in mode none
  EXPECT_DOUBLE_EQ(config.training().gp_lambda(), 10.0);
  EXPECT_DOUBLE_EQ(config.training().lr_critic(), 2e-4);
  EXPECT_DOUBLE_EQ(config.training().beta1(), 0.5);
  EXPECT_EQ(config.parties(0).data(), "/base/a.csv");
}

TEST(ConfigTest, ExplicitZeroIsKeptNotDefaulted) {
  v1::LocalRunConfig config;
  ASSERT_TRUE(ParseJsonInto(R"({"parties":[{"name":"a","data":"/a.csv","schema":"/a.json"}],
                               "training":{"gp_lambda":0,"rounds":0}})",
                            "c.json", &config)
                  .ok());
  ASSERT_TRUE(ResolveLocalRunConfig("", &config).ok());
  EXPECT_EQ(config.training().gp_lambda(), 0.0);
  EXPECT_EQ(config.training().rounds(), 0);
}

TEST(ConfigTest, RejectsNonsense) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"parties":[]})", "no parties"},
      {R"({"parties":[{"name":"a","data":"x"}]})", "'schema'"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"},{"name":"a","data":"x","schema":"y"}]})",
       "used twice"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"training":{"batch_size":0}})",
       "batch_size"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"training":{"beta2":1.5}})", "beta"},
      // Counts a typo would make endless are bounded.
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"training":{"threads":4000}})",
       "training.threads must be in [1, 256], got 4000"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"training":{"n_critic":5000}})",
       "training.n_critic must be in [1, 100], got 5000"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"model":{"experimental":{"pack":0}}})",
       "model.experimental.pack"},
      // A width LibTorch could not allocate is refused here, with the bound.
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"model":{"generator_hidden":[100000000]}})",
       "model.generator_hidden must be in [1, 8192], got 100000000"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"model":{"z_dim":0}})",
       "model.z_dim must be in [1, 8192]"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"model":{"experimental":{"pack":3}},"training":{"batch_size":100}})",
       "training.batch_size 100 is not a multiple of model.experimental.pack 3"},
      // The default batch (256) is no multiple of 10 either.
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"model":{"experimental":{"pack":10}}})",
       "training.batch_size 256 is not a multiple of model.experimental.pack 10"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"training":{"marginal_weight":-1}})",
       "training.marginal_weight"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"training":{"experimental":{"marginal_position_bins":0}}})",
       "training.experimental.marginal_position_bins"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"training":{"experimental":{"marginal_pair_cells":-1}}})",
       "training.experimental.marginal_pair_cells"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"training":{"experimental":{"cross_party_independence_weight":-1}}})",
       "training.experimental.cross_party_independence_weight"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"training":{"experimental":{"marginal_reverse_weight":-0.5}}})",
       "training.experimental.marginal_reverse_weight must be a finite number >= 0"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"model":{"experimental":{"generator_private_z":8}}})",
       "needs model.experimental.generator_towers 'per_party'"},
      {R"({"parties":[{"name":"a","data":"x","schema":"y"}],"model":{"experimental":{"generator_towers":"per_party","generator_private_z":-1}}})",
       "model.experimental.generator_private_z must be >= 0"},
  };
  for (const auto& [json, message] : cases) {
    v1::LocalRunConfig config;
    ASSERT_TRUE(ParseJsonInto(json, "c.json", &config).ok()) << json;
    const absl::Status status = ResolveLocalRunConfig("", &config);
    ASSERT_FALSE(status.ok()) << json;
    EXPECT_THAT(status.message(), HasSubstr(message)) << json;
  }
  // An enum setting's unknown name is refused as the file is read, naming the setting.
  v1::LocalRunConfig config;
  const absl::Status unknown = ParseJsonInto(
      R"({"parties":[{"name":"a","data":"x","schema":"y"}],"model":{"experimental":{"categorical_output":"argmax"}}})",
      "c.json", &config);
  EXPECT_THAT(unknown.message(), HasSubstr("model.experimental.categorical_output"));
  EXPECT_THAT(unknown.message(), HasSubstr("argmax"));
}

// Unset, the reverse KL's weight resolves to 1; an explicit 0 is the forward KL alone.
TEST(ConfigTest, MarginalReverseWeightDefaultsToOne) {
  v1::TrainingConfig training;
  ASSERT_TRUE(ResolveTrainingConfig(&training).ok());
  EXPECT_EQ(training.experimental().marginal_reverse_weight(), 1.0);
  v1::TrainingConfig forward_only;
  forward_only.mutable_experimental()->set_marginal_reverse_weight(0);
  ASSERT_TRUE(ResolveTrainingConfig(&forward_only).ok());
  EXPECT_TRUE(forward_only.experimental().has_marginal_reverse_weight());
  EXPECT_EQ(forward_only.experimental().marginal_reverse_weight(), 0.0);
}

// The digest is of the resolved settings: defaults spelled out are the same run, any
// setting that changes training is another, and the log cadence and ledger path are not
// part of it.
TEST(ConfigTest, SettingsDigestIsOfTheResolvedSettings) {
  const auto resolved = [](const std::string& training_json) {
    v1::CuratorConfig config;
    EXPECT_TRUE(
        ParseJsonInto(absl::StrCat(R"({"run_id":"r","parties":["a"],"plaintext":true,)",
                                   R"("privacy":{"mode":"dpsgd","epsilon":10},"training":{)",
                                   training_json, "}}"),
                      "c.json", &config)
            .ok());
    EXPECT_TRUE(ResolveCuratorConfig("", &config).ok());
    return config;
  };
  const auto digest = [](const v1::CuratorConfig& c) {
    return SettingsDigest(c.model(), c.training(), c.privacy());
  };
  const v1::CuratorConfig defaults = resolved(R"("label_column":"class")");
  const v1::CuratorConfig spelled = resolved(
      R"("label_column":"class","experimental":{"marginal_reverse_weight":1,"marginal_position_bins":4},"batch_size":256)");
  EXPECT_EQ(digest(spelled), digest(defaults));
  EXPECT_EQ(defaults.model().experimental().conditioned_column(), "class");
  EXPECT_NE(
      digest(resolved(R"("label_column":"class","experimental":{"marginal_reverse_weight":0})")),
      digest(defaults));
  EXPECT_NE(digest(resolved(R"("label_column":"class","marginal_weight":0.5)")), digest(defaults));
  v1::CuratorConfig logged = defaults;
  logged.mutable_training()->set_log_every(7);
  logged.mutable_privacy()->set_ledger("/elsewhere.ledger");
  EXPECT_EQ(digest(logged), digest(defaults));
}

// A second privacy block would switch strict to none without a word: a key given twice
// in one object is refused, naming it and both lines.
TEST(ConfigTest, DuplicateKeysAreRefusedNamingTheKeyAndLines) {
  v1::CuratorConfig config;
  const absl::Status status = ParseJsonInto(
      "{\n  \"run_id\": \"r\",\n  \"privacy\": {\"mode\": \"strict\", \"epsilon\": 1},\n"
      "  \"parties\": [\"a\"],\n  \"privacy\": {\"mode\": \"none\"}\n}\n",
      "curator.json", &config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("curator.json:5: key 'privacy' is given twice in one object"),
                    HasSubstr("first on line 3")));
}

// protobuf's type errors name its own types ("TYPE_INT32"); the user reads the
// setting's name and what it takes, the value cut when long.
TEST(ConfigTest, TypeErrorsNameTheSettingAndTheExpectedValue) {
  v1::CuratorConfig config;
  absl::Status status =
      ParseJsonInto(R"({"training": {"rounds": "ten"}})", "curator.json", &config);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("setting 'training.rounds' must be a whole number"),
                    HasSubstr("got '\"ten\"'"), Not(HasSubstr("TYPE_"))));
  status = ParseJsonInto(R"({"privacy": {"mode": "strikt"}})", "curator.json", &config);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("setting 'privacy.mode' must be one of "),
                                      HasSubstr("strict"), Not(HasSubstr("googleapis"))));
  status = ParseJsonInto(R"({"plaintext": 1})", "curator.json", &config);
  EXPECT_THAT(status.message(), HasSubstr("setting 'plaintext' must be true or false"));
  const std::string long_value(50 << 20, '7');
  status = ParseJsonInto(absl::StrCat(R"({"training": {"rounds": ")", long_value, R"("}})"),
                         "curator.json", &config);
  EXPECT_LT(status.message().size(), 400u);
  EXPECT_THAT(status.message(), HasSubstr("bytes)"));
}

// A config saved as UTF-16 (Windows editors' "Unicode") is named as such.
TEST(ConfigTest, AUtf16ConfigIsNamedWithTheFix) {
  std::string utf16 = "\xFF\xFE";
  for (const char c : std::string(R"({"run_id": "r"})")) {
    utf16 += c;
    utf16 += '\0';
  }
  v1::CuratorConfig config;
  EXPECT_THAT(ParseJsonInto(utf16, "curator.json", &config).message(),
              HasSubstr("curator.json: file is UTF-16; save it as UTF-8"));
}

TEST(ConfigTest, PackDividingTheBatchIsAccepted) {
  v1::LocalRunConfig config;
  ASSERT_TRUE(ParseJsonInto(R"({"parties":[{"name":"a","data":"/a.csv","schema":"/a.json"}],
                               "model":{"experimental":{"pack":4}},"training":{"batch_size":64}})",
                            "c.json", &config)
                  .ok());
  ASSERT_TRUE(ResolveLocalRunConfig("", &config).ok());
  EXPECT_EQ(config.model().experimental().pack(), 4);
}

TEST(ConfigTest, PackIsPartOfTheSettingsDigest) {
  v1::ModelConfig packed;
  ASSERT_TRUE(ResolveModelConfig(&packed).ok());
  v1::TrainingConfig training;
  ASSERT_TRUE(ResolveTrainingConfig(&training).ok());
  const v1::PrivacyConfig privacy;
  const std::string unpacked_digest = SettingsDigest(packed, training, privacy);
  packed.mutable_experimental()->set_pack(2);
  // A checkpoint of a run with another pack is refused by its header's digest.
  EXPECT_NE(SettingsDigest(packed, training, privacy), unpacked_digest);
}

// A curator config that resolves (plaintext, one party, mode none) but for `edit`; the
// result in `resolved` if given.
absl::Status ResolveCurator(const std::function<void(v1::CuratorConfig*)>& edit,
                            v1::CuratorConfig* resolved = nullptr) {
  v1::CuratorConfig config;
  config.set_run_id("r");
  config.set_plaintext(true);
  config.add_parties("a");
  config.mutable_privacy()->set_mode(v1::PrivacyConfig::none);
  edit(&config);
  const absl::Status status = ResolveCuratorConfig("", &config);
  if (resolved != nullptr) *resolved = config;
  return status;
}

// dpsgd and strict pull G towards released marginals unless told otherwise; none and
// the papers' modes do not.
TEST(ConfigTest, CuratorDefaultsTheMarginalReleaseByMode) {
  auto resolved = [](v1::PrivacyConfig::Mode mode,
                     const std::function<void(v1::TrainingConfig*)>& set, double epsilon = 3) {
    v1::CuratorConfig config;
    const auto edit = [&](v1::CuratorConfig* c) {
      c->mutable_privacy()->set_mode(mode);
      if (mode != v1::PrivacyConfig::none) c->mutable_privacy()->set_epsilon(epsilon);
      set(c->mutable_training());
    };
    EXPECT_TRUE(ResolveCurator(edit, &config).ok()) << v1::PrivacyConfig::Mode_Name(mode);
    return config.training();
  };
  auto unset = [](v1::TrainingConfig*) {};
  EXPECT_EQ(resolved(v1::PrivacyConfig::none, unset).marginal_weight(), 0.0);
  EXPECT_EQ(resolved(v1::PrivacyConfig::dpsgd, unset).marginal_weight(), 1.0);
  EXPECT_EQ(resolved(v1::PrivacyConfig::strict, unset).marginal_weight(), 1.0);
  EXPECT_EQ(resolved(v1::PrivacyConfig::vflgan, unset).marginal_weight(), 0.0);
  EXPECT_EQ(resolved(v1::PrivacyConfig::gswgan, unset).marginal_weight(), 0.0);
  // Edits of the training block, and what the tests read back.
  auto marginal_weight = [](double w) {
    return [w](v1::TrainingConfig* t) { t->set_marginal_weight(w); };
  };
  auto set_prior = [](double w) {
    return [w](v1::TrainingConfig* t) {
      t->mutable_experimental()->set_cross_party_independence_weight(w);
    };
  };
  auto pair_cells = [](const v1::TrainingConfig& t) {
    return t.experimental().marginal_pair_cells();
  };
  auto prior = [](const v1::TrainingConfig& t) {
    return t.experimental().cross_party_independence_weight();
  };
  // Within-party pairs come with the release, in the DP modes that default it on.
  EXPECT_EQ(pair_cells(resolved(v1::PrivacyConfig::strict, unset)), 120);
  EXPECT_EQ(pair_cells(resolved(v1::PrivacyConfig::dpsgd, unset)), 120);
  EXPECT_EQ(pair_cells(resolved(v1::PrivacyConfig::none, unset)), 0);
  EXPECT_EQ(pair_cells(resolved(v1::PrivacyConfig::none, marginal_weight(1))), 0);
  auto thirty_cells = [](v1::TrainingConfig* t) {
    t->mutable_experimental()->set_marginal_pair_cells(30);
  };
  EXPECT_EQ(pair_cells(resolved(v1::PrivacyConfig::strict, thirty_cells)), 30);
  EXPECT_EQ(resolved(v1::PrivacyConfig::none, marginal_weight(2.5)).marginal_weight(), 2.5);
  // The standard preset: the cross-party prior follows the marginal loss's weight in
  // strict and in dpsgd, at every epsilon, over 3000 rounds.
  EXPECT_EQ(resolved(v1::PrivacyConfig::dpsgd, unset).preset(), v1::TrainingConfig::standard);
  EXPECT_EQ(prior(resolved(v1::PrivacyConfig::strict, unset)), 1.0);
  EXPECT_EQ(prior(resolved(v1::PrivacyConfig::strict, unset, 10)), 1.0);
  EXPECT_EQ(prior(resolved(v1::PrivacyConfig::dpsgd, marginal_weight(10))), 10.0);
  for (const double epsilon : {9.5, 10.0, 50.0}) {
    EXPECT_EQ(prior(resolved(v1::PrivacyConfig::dpsgd, unset, epsilon)), 1.0) << epsilon;
    EXPECT_EQ(resolved(v1::PrivacyConfig::dpsgd, unset, epsilon).rounds(), 3000) << epsilon;
  }
  EXPECT_EQ(resolved(v1::PrivacyConfig::strict, unset, 10).rounds(), 3000);
  // The large_budget preset, chosen rather than inferred from epsilon: no prior unless
  // set, and 10000 rounds (its D_s needs the critic steps to convey the dependence).
  auto large = [](v1::TrainingConfig* t) { t->set_preset(v1::TrainingConfig::large_budget); };
  EXPECT_FALSE(resolved(v1::PrivacyConfig::dpsgd, large, 10)
                   .experimental()
                   .has_cross_party_independence_weight());
  EXPECT_EQ(resolved(v1::PrivacyConfig::dpsgd, large, 10).rounds(), 10000);
  EXPECT_EQ(resolved(v1::PrivacyConfig::dpsgd, large, 2).rounds(), 10000);
  EXPECT_EQ(resolved(v1::PrivacyConfig::dpsgd, large, 10).marginal_weight(), 1.0);
  // With label pairs the release carries the label's dependence: the prior is on.
  auto labelled = [](v1::TrainingConfig* t) { t->set_label_column("class"); };
  EXPECT_EQ(prior(resolved(v1::PrivacyConfig::dpsgd, labelled, 10)), 1.0);
  EXPECT_EQ(resolved(v1::PrivacyConfig::dpsgd, labelled, 10).rounds(), 3000);
  // Without DP, 10000 rounds too: more rounds kept lowering the total difference.
  EXPECT_EQ(resolved(v1::PrivacyConfig::none, unset).rounds(), 10000);
  EXPECT_EQ(
      resolved(v1::PrivacyConfig::none, [](v1::TrainingConfig* t) { t->set_rounds(700); }).rounds(),
      700);
  EXPECT_EQ(resolved(v1::PrivacyConfig::vflgan, unset).rounds(), 3000);
  EXPECT_EQ(prior(resolved(v1::PrivacyConfig::dpsgd, set_prior(2), 10)), 2.0);
  EXPECT_EQ(resolved(
                v1::PrivacyConfig::dpsgd, [](v1::TrainingConfig* t) { t->set_rounds(500); }, 10)
                .rounds(),
            500);
  EXPECT_EQ(prior(resolved(v1::PrivacyConfig::none, marginal_weight(1))), 0.0);
  EXPECT_EQ(prior(resolved(v1::PrivacyConfig::strict, set_prior(3))), 3.0);
  EXPECT_EQ(prior(resolved(v1::PrivacyConfig::strict, set_prior(0))), 0.0);
  // An explicit 0 turns either off and is kept as written.
  const v1::TrainingConfig off = resolved(v1::PrivacyConfig::strict, marginal_weight(0));
  EXPECT_TRUE(off.has_marginal_weight());
  EXPECT_EQ(off.marginal_weight(), 0.0);
  EXPECT_EQ(off.experimental().marginal_pair_cells(), 0);
  EXPECT_EQ(off.experimental().cross_party_independence_weight(), 0.0);
  const v1::TrainingConfig unpaired = resolved(
      v1::PrivacyConfig::strict,
      [](v1::TrainingConfig* t) { t->mutable_experimental()->set_marginal_pair_cells(0); });
  EXPECT_EQ(unpaired.marginal_weight(), 1.0);
  EXPECT_TRUE(unpaired.experimental().has_marginal_pair_cells());
  EXPECT_EQ(unpaired.experimental().marginal_pair_cells(), 0);
}

// large_budget is refused where its premise (a dpsgd D_s conveying the dependence the
// prior would remove) does not hold, rather than quietly training another model.
// A marginals fit spends no budget per step: fewer steps and checkpoints than a GAN's rounds.
TEST(ConfigTest, MarginalsFitDefaultsToFewerStepsAndSparseCheckpoints) {
  auto resolved = [](v1::PrivacyConfig::Mode mode, int checkpoint_every) {
    v1::CuratorConfig config;
    EXPECT_TRUE(ResolveCurator(
                    [&](v1::CuratorConfig* c) {
                      c->mutable_privacy()->set_mode(mode);
                      c->mutable_privacy()->set_epsilon(1);
                      if (checkpoint_every > 0) c->set_checkpoint_every(checkpoint_every);
                    },
                    &config)
                    .ok());
    return config;
  };
  EXPECT_EQ(resolved(v1::PrivacyConfig::marginals, 0).training().rounds(), 2000);
  EXPECT_EQ(resolved(v1::PrivacyConfig::marginals, 0).checkpoint_every(), 100);
  EXPECT_EQ(resolved(v1::PrivacyConfig::marginals, 7).checkpoint_every(), 7);
  EXPECT_EQ(resolved(v1::PrivacyConfig::strict, 0).training().rounds(), 3000);
  EXPECT_EQ(resolved(v1::PrivacyConfig::strict, 0).checkpoint_every(), 1);
}

// A config written for a GAN mode but without privacy.mode would otherwise run the default
// mode with its critic settings silently ignored.
TEST(ConfigTest, MarginalsRefusesSettingsOnlyTheGanModesRead) {
  const std::vector<std::pair<std::string, std::function<void(v1::CuratorConfig*)>>> cases = {
      {"training.n_critic", [](v1::CuratorConfig* c) { c->mutable_training()->set_n_critic(5); }},
      {"privacy.clip_norm", [](v1::CuratorConfig* c) { c->mutable_privacy()->set_clip_norm(2); }},
      {"model.feature_dim", [](v1::CuratorConfig* c) { c->mutable_model()->set_feature_dim(16); }},
      {"model.shared_hidden",
       [](v1::CuratorConfig* c) { c->mutable_model()->add_shared_hidden(64); }},
      {"privacy.ensemble.shards",
       [](v1::CuratorConfig* c) { c->mutable_privacy()->mutable_ensemble()->set_shards(8); }},
  };
  for (const auto& [path, set] : cases) {
    for (const bool explicit_mode : {false, true}) {
      const absl::Status status = ResolveCurator([&](v1::CuratorConfig* c) {
        if (explicit_mode) {
          c->mutable_privacy()->set_mode(v1::PrivacyConfig::marginals);
        } else {
          c->mutable_privacy()->clear_mode();
        }
        c->mutable_privacy()->set_epsilon(1);
        set(c);
      });
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << path;
      EXPECT_THAT(status.message(), HasSubstr(path + " does not apply to privacy.mode 'marginals'"));
    }
    // A resolved config resolves again: the defaults it holds are not refused.
    v1::CuratorConfig resolved;
    ASSERT_TRUE(ResolveCurator(
                    [](v1::CuratorConfig* c) {
                      c->mutable_privacy()->clear_mode();
                      c->mutable_privacy()->set_epsilon(1);
                    },
                    &resolved)
                    .ok());
    v1::CuratorConfig again = resolved;
    EXPECT_TRUE(ResolveCuratorConfig("", &again).ok()) << ResolveCuratorConfig("", &again);
    // The same setting is a GAN mode's to read.
    const absl::Status strict = ResolveCurator([&](v1::CuratorConfig* c) {
      c->mutable_privacy()->set_mode(v1::PrivacyConfig::strict);
      c->mutable_privacy()->set_epsilon(1);
      set(c);
    });
    EXPECT_FALSE(absl::StrContains(strict.message(), "does not apply")) << path << ": " << strict;
  }
}

TEST(ConfigTest, OutputRowsAreBounded) {
  const absl::Status status = ResolveCurator(
      [](v1::CuratorConfig* c) { c->mutable_output()->set_rows(5'000'000'000); });
  EXPECT_THAT(status.message(), HasSubstr("output.rows must be in [0, 1000000000], got 5000000000"));
  EXPECT_TRUE(
      ResolveCurator([](v1::CuratorConfig* c) { c->mutable_output()->set_rows(1'000'000); }).ok());
}

TEST(ConfigTest, LargeBudgetPresetOnlyInDpsgdWithoutLabelPairs) {
  const std::pair<v1::PrivacyConfig::Mode, std::string> refused[] = {
      {v1::PrivacyConfig::strict, ""},
      {v1::PrivacyConfig::none, ""},
      {v1::PrivacyConfig::dpsgd, "class"}};
  for (const auto& [mode, label] : refused) {
    const absl::Status status = ResolveCurator([&](v1::CuratorConfig* c) {
      c->mutable_privacy()->set_mode(mode);
      if (mode != v1::PrivacyConfig::none) c->mutable_privacy()->set_epsilon(10);
      c->mutable_training()->set_preset(v1::TrainingConfig::large_budget);
      c->mutable_training()->set_label_column(label);
    });
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << v1::PrivacyConfig::Mode_Name(mode) << label;
    EXPECT_THAT(status.message(),
                HasSubstr("training.preset 'large_budget' is for privacy.mode dpsgd"));
  }
  v1::LocalRunConfig local;
  local.add_parties()->set_name("a");
  local.mutable_parties(0)->set_data("/a.csv");
  local.mutable_parties(0)->set_schema("/a.json");
  local.mutable_training()->set_preset(v1::TrainingConfig::large_budget);
  EXPECT_THAT(ResolveLocalRunConfig("", &local).message(), HasSubstr("training.preset"));
}
TEST(ConfigTest, CuratorRefusesPackWithDpsgd) {
  EXPECT_TRUE(ResolveCurator([](v1::CuratorConfig*) {}).ok());
  EXPECT_TRUE(ResolveCurator([](v1::CuratorConfig* c) {
                c->mutable_model()->mutable_experimental()->set_pack(4);
              }).ok());
  const absl::Status dpsgd = ResolveCurator([](v1::CuratorConfig* c) {
    c->mutable_model()->mutable_experimental()->set_pack(2);
    c->mutable_privacy()->set_mode(v1::PrivacyConfig::dpsgd);
    c->mutable_privacy()->set_epsilon(3);
  });
  ASSERT_FALSE(dpsgd.ok());
  EXPECT_EQ(dpsgd.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dpsgd.message(), HasSubstr("model.experimental.pack 2"));
  EXPECT_THAT(dpsgd.message(), HasSubstr("dpsgd"));
  // pack 1 is dpsgd's only setting; other private modes pack D_s as mode none does.
  EXPECT_TRUE(ResolveCurator([](v1::CuratorConfig* c) {
                c->mutable_privacy()->set_mode(v1::PrivacyConfig::dpsgd);
                c->mutable_privacy()->set_epsilon(3);
              }).ok());
  EXPECT_TRUE(ResolveCurator([](v1::CuratorConfig* c) {
                c->mutable_model()->mutable_experimental()->set_pack(2);
                c->mutable_privacy()->set_mode(v1::PrivacyConfig::strict);
                c->mutable_privacy()->set_epsilon(3);
              }).ok());
  const absl::Status batch = ResolveCurator([](v1::CuratorConfig* c) {
    c->mutable_model()->mutable_experimental()->set_pack(3);
    c->mutable_training()->set_batch_size(64);
  });
  EXPECT_THAT(batch.message(),
              HasSubstr("training.batch_size 64 is not a multiple of model.experimental.pack 3"));
}

TEST(ConfigTest, UnknownFieldIsAnError) {
  v1::LocalRunConfig config;
  const absl::Status status = ParseJsonInto(R"({"trainig":{}})", "c.json", &config);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("c.json"));
}

}  // namespace
}  // namespace vfsynth

namespace vfsynth {
namespace {

TEST(PrivacyConfigTest, MarginalsIsTheDefaultAndNeedsABudget) {
  v1::PrivacyConfig privacy;
  const absl::Status status = ResolvePrivacyConfig(&privacy);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), ::testing::HasSubstr("'marginals' needs privacy.epsilon"));
  EXPECT_EQ(privacy.mode(), v1::PrivacyConfig::marginals);

  v1::PrivacyConfig budget;
  budget.set_epsilon(3);
  ASSERT_TRUE(ResolvePrivacyConfig(&budget).ok());
  EXPECT_EQ(budget.mode(), v1::PrivacyConfig::marginals);
  EXPECT_DOUBLE_EQ(budget.delta(), 1e-5);
  EXPECT_EQ(budget.experimental().conversion(), v1::ExperimentalPrivacyConfig::improved);

  v1::PrivacyConfig strict;
  strict.set_mode(v1::PrivacyConfig::strict);
  strict.set_epsilon(3);
  ASSERT_TRUE(ResolvePrivacyConfig(&strict).ok());
  EXPECT_DOUBLE_EQ(strict.clip_norm(), 1.0);

  v1::PrivacyConfig none;
  none.set_mode(v1::PrivacyConfig::none);
  EXPECT_TRUE(ResolvePrivacyConfig(&none).ok());

  v1::PrivacyConfig bad;
  bad.set_mode(v1::PrivacyConfig::MODE_UNSPECIFIED);
  bad.set_epsilon(1);
  EXPECT_FALSE(ResolvePrivacyConfig(&bad).ok());
  v1::PrivacyConfig misspelt;
  const absl::Status parsed =
      ParseJsonInto(R"({"mode": "pate-ish", "epsilon": 1})", "privacy", &misspelt);
  EXPECT_EQ(parsed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.message(), HasSubstr("pate-ish"));
  v1::PrivacyConfig bad_delta;
  bad_delta.set_epsilon(1);
  bad_delta.set_delta(1.5);
  EXPECT_FALSE(ResolvePrivacyConfig(&bad_delta).ok());
}

// The marginal release's settings are left unset (digests of runs without it keep their
// value) and read through accessors with their defaults; no release without the loss.
TEST(PrivacyConfigTest, MarginalReleaseDefaultsAndValidation) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::strict);
  privacy.set_epsilon(3);
  ASSERT_TRUE(ResolvePrivacyConfig(&privacy).ok());
  EXPECT_FALSE(privacy.has_marginal_noise_multiplier());
  v1::TrainingConfig training;
  ASSERT_TRUE(ResolveTrainingConfig(&training).ok());
  EXPECT_FALSE(training.has_marginal_weight());
  EXPECT_EQ(MarginalNoiseMultiplier(privacy, training, 3), 0.0);  // no loss, no release
  EXPECT_EQ(MarginalOptionsFor(training).position_bins, 4);
  EXPECT_EQ(MarginalOptionsFor(training).pair_cells, 0);
  EXPECT_FALSE(training.experimental().has_marginal_pair_cells());
  training.set_marginal_weight(10);
  // ε = 3, δ = 1e-5: ρ = (√(ln 1e5 + 3) − √(ln 1e5))² = 0.1735; a tenth of it for 3
  // releases: z = √(3 / (2 · 0.01735)) = 9.299.
  EXPECT_NEAR(MarginalNoiseMultiplier(privacy, training, 3), 9.299, 0.01);
  privacy.set_marginal_budget_share(0.4);  // four times the share: half the noise
  EXPECT_NEAR(MarginalNoiseMultiplier(privacy, training, 3), 9.299 / 2, 0.01);
  privacy.set_marginal_noise_multiplier(15);
  EXPECT_EQ(MarginalNoiseMultiplier(privacy, training, 3), 15.0);
  v1::PrivacyConfig no_budget;  // a noise multiplier instead of a budget
  no_budget.set_mode(v1::PrivacyConfig::strict);
  no_budget.set_noise_multiplier(2);
  ASSERT_TRUE(ResolvePrivacyConfig(&no_budget).ok());
  EXPECT_EQ(MarginalNoiseMultiplier(no_budget, training, 3), 30.0);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    v1::PrivacyConfig p;
    p.set_mode(v1::PrivacyConfig::strict);
    p.set_epsilon(3);
    p.set_marginal_noise_multiplier(bad);
    const absl::Status status = ResolvePrivacyConfig(&p);
    ASSERT_FALSE(status.ok()) << bad;
    EXPECT_THAT(status.message(), HasSubstr("privacy.marginal_noise_multiplier")) << bad;
    v1::PrivacyConfig share;
    share.set_mode(v1::PrivacyConfig::strict);
    share.set_epsilon(3);
    share.set_marginal_budget_share(bad == 0.0 ? 1.0 : bad);
    ASSERT_FALSE(ResolvePrivacyConfig(&share).ok()) << bad;
  }
}

// Party names become file names and identity URIs; addresses must name a real port
// (a port out of range would wrap in the socket layer and listen elsewhere).
TEST(ConfigTest, RefusesPathLikePartyNamesAndOutOfRangePorts) {
  EXPECT_TRUE(ResolveCurator([](v1::CuratorConfig*) {}).ok());
  const std::pair<std::function<void(v1::CuratorConfig*)>, const char*> refused[] = {
      {[](v1::CuratorConfig* c) { c->add_parties("../evil"); }, "'../evil' is not a party name"},
      {[](v1::CuratorConfig* c) { c->add_parties("a"); }, "'a' is used twice"},
      {[](v1::CuratorConfig* c) { c->add_parties(""); }, "'' is not a party name"},
      {[](v1::CuratorConfig* c) { c->set_listen("127.0.0.1:99999"); },
       "listen '127.0.0.1:99999' is not host:port"},
      {[](v1::CuratorConfig* c) { c->set_listen("localhost"); },
       "listen 'localhost' is not host:port"},
      {[](v1::CuratorConfig* c) { c->set_metrics_listen("127.0.0.1:-1"); }, "metrics_listen"},
  };
  for (const auto& [edit, message] : refused) {
    const absl::Status status = ResolveCurator(edit);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(status.message(), HasSubstr(message));
  }

  auto party = [](const std::string& name, const std::string& curator_address) {
    v1::PartyConfig config;
    config.set_name(name);
    config.set_curator(curator_address);
    config.set_data("d.csv");
    config.set_schema("s.json");
    config.set_secrets("secrets.txt");
    config.set_plaintext(true);
    config.mutable_privacy()->set_mode(v1::PrivacyConfig::none);
    return ResolvePartyConfig("", &config);
  };
  const absl::Status valid = party("bank", "localhost:50051");
  EXPECT_TRUE(valid.ok()) << valid;
  EXPECT_THAT(party("bank/../x", "127.0.0.1:50051").message(), HasSubstr("is not a party name"));
  EXPECT_THAT(party("bank", "127.0.0.1:0").message(),
              HasSubstr("curator '127.0.0.1:0' is not host:port (port 1-65535)"));
  EXPECT_THAT(party("bank", "127.0.0.1:70000").message(), HasSubstr("is not host:port"));
}

// Without TLS anyone on the path reads and forges every message: plaintext is refused
// on any address but loopback, on both sides.
TEST(ConfigTest, PlaintextIsConfinedToLoopbackAddresses) {
  for (const std::string listen : {"127.0.0.1:0", "[::1]:50051", "localhost:50051"}) {
    const absl::Status status =
        ResolveCurator([&](v1::CuratorConfig* c) { c->set_listen(listen); });
    EXPECT_TRUE(status.ok()) << listen << ": " << status;
  }
  for (const std::string listen :
       {"0.0.0.0:50051", "[::]:50051", "10.0.0.5:50051", "127.evil.example:50051"}) {
    const absl::Status status =
        ResolveCurator([&](v1::CuratorConfig* c) { c->set_listen(listen); });
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << listen;
    EXPECT_THAT(status.message(), AllOf(HasSubstr("listen '" + listen + "'"),
                                        HasSubstr("not a loopback address")))
        << listen;
  }
  v1::PartyConfig party;
  party.set_name("bank");
  party.set_curator("curator.example:50051");
  party.set_data("d.csv");
  party.set_schema("s.json");
  party.set_secrets("secrets.txt");
  party.set_plaintext(true);
  party.mutable_privacy()->set_mode(v1::PrivacyConfig::none);
  const absl::Status remote = ResolvePartyConfig("", &party);
  EXPECT_EQ(remote.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(remote.message(), AllOf(HasSubstr("curator 'curator.example:50051'"),
                                      HasSubstr("not a loopback address")));
}

// The health port is the one plaintext listener allowed beyond loopback; it widens
// nothing else: a plaintext run's own port stays on loopback beside it.
TEST(ConfigTest, OnlyTheHealthPortMayServePlaintextBeyondLoopback) {
  v1::CuratorConfig resolved;
  ASSERT_TRUE(ResolveCurator([](v1::CuratorConfig*) {}, &resolved).ok());
  EXPECT_EQ(resolved.health_listen(), "");  // off by default
  for (const std::string health : {"0.0.0.0:8080", "[::]:8080", "10.0.0.5:8080"}) {
    const absl::Status status =
        ResolveCurator([&](v1::CuratorConfig* c) { c->set_health_listen(health); });
    EXPECT_TRUE(status.ok()) << health << ": " << status;
  }
  const absl::Status beside = ResolveCurator([](v1::CuratorConfig* c) {
    c->set_health_listen("0.0.0.0:8080");
    c->set_listen("0.0.0.0:50051");
  });
  EXPECT_EQ(beside.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(beside.message(), AllOf(HasSubstr("listen '0.0.0.0:50051'"),
                                      HasSubstr("not a loopback address")));
  const std::pair<std::string, const char*> refused[] = {
      {"0.0.0.0", "health_listen '0.0.0.0' is not host:port"},
      {"127.0.0.1:70000", "health_listen '127.0.0.1:70000' is not host:port"},
      {"127.0.0.1:50051", "is the gRPC listen address; give it its own port"},
  };
  for (const auto& [health, message] : refused) {
    const absl::Status status = ResolveCurator([&](v1::CuratorConfig* c) {
      c->set_listen("127.0.0.1:50051");
      c->set_health_listen(health);
    });
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << health;
    EXPECT_THAT(status.message(), HasSubstr(message)) << health;
  }
}

// The registration limits: defaults from the table, each bounded by its ceiling.
TEST(ConfigTest, RegistrationLimitsDefaultAndAreBounded) {
  v1::CuratorConfig resolved;
  ASSERT_TRUE(ResolveCurator([](v1::CuratorConfig*) {}, &resolved).ok());
  EXPECT_EQ(resolved.registration_limits().columns(), 1000);
  EXPECT_EQ(resolved.registration_limits().categories_per_column(), 1000);
  EXPECT_EQ(resolved.registration_limits().encoded_width(), 4096);
  const std::pair<std::function<void(v1::CuratorConfig*)>, const char*> refused[] = {
      {[](v1::CuratorConfig* c) { c->mutable_registration_limits()->set_columns(0); },
       "registration_limits.columns must be in [1, 10000], got 0"},
      {[](v1::CuratorConfig* c) {
         c->mutable_registration_limits()->set_categories_per_column(1'000'000);
       },
       "registration_limits.categories_per_column must be in [1, 100000], got 1000000"},
      {[](v1::CuratorConfig* c) { c->mutable_registration_limits()->set_encoded_width(-5); },
       "registration_limits.encoded_width must be in [1, 100000], got -5"},
  };
  for (const auto& [edit, message] : refused) {
    const absl::Status status = ResolveCurator(edit);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(status.message(), HasSubstr(message));
  }
}

// The published label: output.label_column defaults to training.label_column, its
// temperature to 0.5 with a column and 1 without; nonsense is refused.
TEST(ConfigTest, OutputLabelTemperatureDefaultsAndValidation) {
  auto resolved = [](const std::function<void(v1::CuratorConfig*)>& edit) {
    v1::CuratorConfig config;
    config.set_run_id("r");
    config.set_plaintext(true);
    config.add_parties("a");
    config.mutable_privacy()->set_mode(v1::PrivacyConfig::strict);
    config.mutable_privacy()->set_epsilon(10);
    edit(&config);
    const absl::Status status = ResolveCuratorConfig("", &config);
    return std::make_pair(status, config.output());
  };
  auto [plain_status, plain] = resolved([](v1::CuratorConfig*) {});
  ASSERT_TRUE(plain_status.ok()) << plain_status;
  EXPECT_EQ(plain.label_column(), "");
  EXPECT_EQ(plain.label_temperature(), 1.0);
  auto [pairs_status, pairs] =
      resolved([](v1::CuratorConfig* c) { c->mutable_training()->set_label_column("class"); });
  ASSERT_TRUE(pairs_status.ok()) << pairs_status;
  EXPECT_EQ(pairs.label_column(), "class");
  EXPECT_EQ(pairs.label_temperature(), kDefaultLabelTemperature);
  auto [own_status, own] = resolved([](v1::CuratorConfig* c) {
    c->mutable_training()->set_label_column("class");
    c->mutable_output()->set_label_column("income");
    c->mutable_output()->set_label_temperature(1);
  });
  ASSERT_TRUE(own_status.ok()) << own_status;
  EXPECT_EQ(own.label_column(), "income");
  EXPECT_EQ(own.label_temperature(), 1.0);
  for (double bad : {0.0, -0.5, 10.5, std::numeric_limits<double>::quiet_NaN()}) {
    auto [status, _] = resolved([&](v1::CuratorConfig* c) {
      c->mutable_output()->set_label_column("class");
      c->mutable_output()->set_label_temperature(bad);
    });
    EXPECT_THAT(status.message(), HasSubstr("output.label_temperature must be in (0, 10]")) << bad;
  }
  auto [orphan, _] =
      resolved([](v1::CuratorConfig* c) { c->mutable_output()->set_label_temperature(0.5); });
  EXPECT_THAT(orphan.message(), HasSubstr("needs output.label_column"));
}

TEST(PrivacyConfigTest, LabelPairsNeedADpModeAndTheMarginalRelease) {
  auto with_label = [](v1::PrivacyConfig::Mode mode, double marginal_weight) {
    return ResolveCurator([&](v1::CuratorConfig* c) {
      c->mutable_privacy()->set_mode(mode);
      if (mode != v1::PrivacyConfig::none) c->mutable_privacy()->set_epsilon(10);
      c->mutable_training()->set_label_column("class");
      c->mutable_training()->set_marginal_weight(marginal_weight);
    });
  };
  EXPECT_TRUE(with_label(v1::PrivacyConfig::strict, 1).ok());
  EXPECT_TRUE(with_label(v1::PrivacyConfig::dpsgd, 1).ok());
  EXPECT_THAT(with_label(v1::PrivacyConfig::none, 1).message(),
              HasSubstr("needs privacy.mode 'dpsgd' or 'strict'"));
  EXPECT_THAT(with_label(v1::PrivacyConfig::vflgan, 1).message(), HasSubstr("needs privacy.mode"));
  EXPECT_THAT(with_label(v1::PrivacyConfig::strict, 0).message(), HasSubstr("marginal_weight > 0"));

  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::strict);
  privacy.set_epsilon(3);
  ASSERT_TRUE(ResolvePrivacyConfig(&privacy).ok());
  v1::TrainingConfig training;
  training.set_marginal_weight(1);
  ASSERT_TRUE(ResolveTrainingConfig(&training).ok());
  EXPECT_EQ(LabelEpsilon(privacy, training), 0.0);              // no label column
  EXPECT_EQ(training.experimental().label_pair_weight(), 1.0);  // the marginal weight
  const double alone = MarginalNoiseMultiplier(privacy, training, 3);
  training.set_label_column("class");
  // ρ = 0.1735 at ε = 3 (above), converting best at α* = 1 + √(ln(1e5) / ρ) = 9.146; 0.3
  // of α*·ρ for the labels: randomized response whose RDP at α* is 0.476, ε_l = 0.5327
  // (solved independently, scipy-free bisection in Python on the closed form).
  const double rho = 0.17348321192510024;
  const double order = 1.0 + std::sqrt(std::log(1e5) / rho);
  EXPECT_NEAR(LabelEpsilon(privacy, training), 0.5327, 1e-4);
  EXPECT_NEAR(privacy::RandomizedResponseRdp(LabelEpsilon(privacy, training), order),
              0.3 * order * rho, 1e-9);
  v1::PrivacyConfig dpsgd;  // dpsgd's default share is 0.15
  dpsgd.set_mode(v1::PrivacyConfig::dpsgd);
  dpsgd.set_epsilon(3);
  ASSERT_TRUE(ResolvePrivacyConfig(&dpsgd).ok());
  EXPECT_NEAR(LabelEpsilon(dpsgd, training), 0.3052, 1e-4);
  EXPECT_NEAR(privacy::RandomizedResponseRdp(LabelEpsilon(dpsgd, training), order),
              0.15 * order * rho, 1e-9);
  // The marginal share now covers 3 releases of marginals and 2 of tables.
  EXPECT_NEAR(MarginalNoiseMultiplier(privacy, training, 3), alone * std::sqrt(5.0 / 3.0), 1e-9);
  privacy.mutable_experimental()->set_label_budget_share(0.075);
  EXPECT_NEAR(privacy::RandomizedResponseRdp(LabelEpsilon(privacy, training), order),
              0.075 * order * rho, 1e-9);
  privacy.set_label_epsilon(2.5);
  EXPECT_EQ(LabelEpsilon(privacy, training), 2.5);
  privacy.set_mode(v1::PrivacyConfig::none);
  EXPECT_EQ(LabelEpsilon(privacy, training), 0.0);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    v1::PrivacyConfig p;
    p.set_epsilon(3);
    p.set_label_epsilon(bad);
    EXPECT_THAT(ResolvePrivacyConfig(&p).message(), HasSubstr("privacy.label_epsilon")) << bad;
    v1::PrivacyConfig share;
    share.set_epsilon(3);
    share.mutable_experimental()->set_label_budget_share(bad == 0.0 ? 1.0 : bad);
    EXPECT_THAT(ResolvePrivacyConfig(&share).message(),
                HasSubstr("privacy.experimental.label_budget_share"))
        << bad;
  }
  v1::TrainingConfig negative;
  negative.mutable_experimental()->set_label_pair_weight(-1);
  EXPECT_THAT(ResolveTrainingConfig(&negative).message(),
              HasSubstr("training.experimental.label_pair_weight"));
}

TEST(PrivacyConfigTest, SharedCriticBudgetShareIsDpsgdOnlyAndInTheOpenUnitInterval) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::dpsgd);
  privacy.set_epsilon(10);
  ASSERT_TRUE(ResolvePrivacyConfig(&privacy).ok());
  EXPECT_DOUBLE_EQ(privacy.experimental().shared_critic_budget_share(),
                   kDefaultSharedCriticBudgetShare);
  privacy.mutable_experimental()->set_shared_critic_budget_share(0.5);
  ASSERT_TRUE(ResolvePrivacyConfig(&privacy).ok());
  EXPECT_DOUBLE_EQ(privacy.experimental().shared_critic_budget_share(), 0.5);
  for (double bad : {0.0, 1.0, -0.2, 1.5, std::nan("")}) {
    v1::PrivacyConfig invalid = privacy;
    invalid.mutable_experimental()->set_shared_critic_budget_share(bad);
    const absl::Status status = ResolvePrivacyConfig(&invalid);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("(0, 1)")) << bad;
  }
  v1::PrivacyConfig strict;
  strict.set_mode(v1::PrivacyConfig::strict);
  strict.set_epsilon(10);
  ASSERT_TRUE(ResolvePrivacyConfig(&strict).ok());
  EXPECT_FALSE(
      strict.experimental().has_shared_critic_budget_share());  // no D_s release to split off
  strict.mutable_experimental()->set_shared_critic_budget_share(0.5);
  const absl::Status status = ResolvePrivacyConfig(&strict);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("shared_critic_budget_share"), HasSubstr("'dpsgd' only")));
}

TEST(PrivacyConfigTest, EnsembleModesAndTheirDefaults) {
  for (const v1::PrivacyConfig::Mode mode : {v1::PrivacyConfig::gswgan, v1::PrivacyConfig::pate}) {
    v1::PrivacyConfig privacy;
    privacy.set_mode(mode);
    privacy.set_epsilon(10);
    ASSERT_TRUE(ResolvePrivacyConfig(&privacy).ok()) << v1::PrivacyConfig::Mode_Name(mode);
    EXPECT_EQ(privacy.ensemble().shards(), mode == v1::PrivacyConfig::pate ? 1024 : 256);
    EXPECT_EQ(privacy.ensemble().vote_top_k(), 5);
    EXPECT_EQ(privacy.ensemble().experimental().vote_aggregation(),
              v1::ExperimentalEnsembleConfig::threshold);
  }
  v1::PrivacyConfig bad;
  bad.set_mode(v1::PrivacyConfig::pate);
  bad.set_epsilon(10);
  // A number no name stands for (a binary plan or settings file can hold one).
  bad.mutable_ensemble()->mutable_experimental()->set_vote_aggregation(
      static_cast<v1::ExperimentalEnsembleConfig::VoteAggregation>(7));
  EXPECT_THAT(ResolvePrivacyConfig(&bad).message(), ::testing::HasSubstr("vote_aggregation"));
  v1::PrivacyConfig no_shards;
  no_shards.set_mode(v1::PrivacyConfig::gswgan);
  no_shards.set_epsilon(10);
  no_shards.mutable_ensemble()->set_shards(0);
  EXPECT_THAT(ResolvePrivacyConfig(&no_shards).message(), ::testing::HasSubstr("shards"));
  v1::PrivacyConfig threshold;
  threshold.set_mode(v1::PrivacyConfig::pate);
  threshold.set_epsilon(10);
  threshold.mutable_ensemble()->set_vote_threshold(1.5);
  EXPECT_FALSE(ResolvePrivacyConfig(&threshold).ok());
}

// A party reads one table: a CSV or a PostgreSQL source, never both or neither, and the
// password never sits in the config.
TEST(ConfigTest, PartyNamesExactlyOneSourceAndNoPasswordInTheConfig) {
  const auto resolve = [](const std::function<void(v1::PartyConfig*)>& edit,
                          v1::PartyConfig* resolved = nullptr) {
    v1::PartyConfig config;
    config.set_name("bank");
    config.set_curator("localhost:50051");
    config.set_schema("s.json");
    config.set_secrets("secrets.txt");
    config.set_plaintext(true);
    config.mutable_privacy()->set_mode(v1::PrivacyConfig::none);
    config.mutable_postgres()->set_conninfo("host=/run/postgresql dbname=bank user=reader");
    config.mutable_postgres()->set_table("customers");
    edit(&config);
    const absl::Status status = ResolvePartyConfig("/etc/vfsynth", &config);
    if (resolved != nullptr) *resolved = config;
    return status;
  };
  v1::PartyConfig resolved;
  const absl::Status valid =
      resolve([](v1::PartyConfig* c) { c->mutable_postgres()->set_password_file("pg.password"); },
              &resolved);
  ASSERT_TRUE(valid.ok()) << valid;
  EXPECT_EQ(resolved.postgres().password_file(), "/etc/vfsynth/pg.password");
  EXPECT_EQ(resolved.checkpoint_dir(), "/etc/vfsynth/bank.checkpoint");
  EXPECT_EQ(resolved.privacy().ledger(), "/etc/vfsynth/bank.ledger");

  const std::pair<std::function<void(v1::PartyConfig*)>, const char*> refused[] = {
      {[](v1::PartyConfig* c) { c->set_data("d.csv"); }, "data and postgres both name"},
      {[](v1::PartyConfig* c) { c->clear_postgres(); },
       "data (a CSV file) or postgres is required"},
      {[](v1::PartyConfig* c) { c->mutable_postgres()->set_query("SELECT 1"); },
       "postgres: set exactly one of table"},
      {[](v1::PartyConfig* c) { c->mutable_postgres()->clear_table(); },
       "postgres: set exactly one of table"},
      {[](v1::PartyConfig* c) { c->mutable_postgres()->clear_conninfo(); },
       "postgres.conninfo is required"},
      {[](v1::PartyConfig* c) { c->mutable_postgres()->set_conninfo("dbname=b password=hunter2"); },
       "postgres.conninfo must not carry a password: put it in postgres.password_file"},
      {[](v1::PartyConfig* c) { c->mutable_postgres()->set_conninfo("dbname=b PassWord = x"); },
       "must not carry a password"},
      {[](v1::PartyConfig* c) {
         c->mutable_postgres()->set_conninfo("postgresql://reader:hunter2@db.example/bank");
       },
       "must not carry a password"},
      {[](v1::PartyConfig* c) {
         c->mutable_postgres()->set_conninfo("postgresql://db.example/bank?password=hunter2");
       },
       "must not carry a password"},
  };
  for (const auto& [edit, message] : refused) {
    const absl::Status status = resolve(edit);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(status.message(), AllOf(HasSubstr(message), Not(HasSubstr("hunter2"))));
  }
  EXPECT_TRUE(resolve([](v1::PartyConfig* c) {
                c->mutable_postgres()->set_conninfo("postgresql://reader@db.example/bank");
              }).ok());
}

TEST(ConfigTest, OutputPostgresNeedsATableAndNoPassword) {
  v1::CuratorConfig resolved;
  ASSERT_TRUE(ResolveCurator(
                  [](v1::CuratorConfig* c) {
                    c->mutable_output()->mutable_postgres()->set_conninfo("dbname=out");
                    c->mutable_output()->mutable_postgres()->set_table("synthetic");
                    c->mutable_output()->mutable_postgres()->set_password_file("pw");
                  },
                  &resolved)
                  .ok());
  EXPECT_EQ(resolved.output().postgres().password_file(), "pw");
  EXPECT_THAT(ResolveCurator([](v1::CuratorConfig* c) {
                c->mutable_output()->mutable_postgres()->set_conninfo("dbname=out");
              }).message(),
              HasSubstr("output.postgres.table is required"));
  EXPECT_THAT(ResolveCurator([](v1::CuratorConfig* c) {
                c->mutable_output()->mutable_postgres()->set_conninfo("dbname=out password=x");
                c->mutable_output()->mutable_postgres()->set_table("synthetic");
              }).message(),
              HasSubstr("output.postgres.conninfo must not carry a password"));
}

}  // namespace
}  // namespace vfsynth
