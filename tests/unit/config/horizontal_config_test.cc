// The horizontal topology's settings: DP-FED-WAE's defaults, signds as the mode, and a
// clear refusal of every setting that belongs to the other topology.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/proto_json.h"
#include "common/config/config.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<v1::CuratorConfig> Curator(const std::string& extra) {
  v1::CuratorConfig config;
  const std::string json =
      absl::StrCat(R"({"run_id":"r","parties":["a","b"],"plaintext":true,)", extra, "}");
  absl::Status status = ParseJsonInto(json, "c.json", &config);
  if (status.ok()) status = ResolveCuratorConfig("/base", &config);
  if (!status.ok()) return status;
  return config;
}

absl::StatusOr<v1::PartyConfig> Party(const std::string& extra) {
  v1::PartyConfig config;
  const std::string json = absl::StrCat(
      R"({"name":"a","curator":"127.0.0.1:5","plaintext":true,"data":"a.csv","schema":"a.json",)",
      extra, "}");
  absl::Status status = ParseJsonInto(json, "p.json", &config);
  if (status.ok()) status = ResolvePartyConfig("/base", &config);
  if (!status.ok()) return status;
  return config;
}

TEST(HorizontalConfigTest, DefaultsAreDpFedWaesAndTheModeIsSignds) {
  auto config = Curator(R"("topology":"horizontal","privacy":{"epsilon":8})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->privacy().mode(), v1::PrivacyConfig::signds);
  const v1::HorizontalConfig& h = config->horizontal();
  EXPECT_EQ(h.users_per_round(), 10);
  EXPECT_EQ(h.local_epochs(), 10);
  EXPECT_DOUBLE_EQ(h.local_learning_rate(), 1e-3);
  EXPECT_EQ(h.local_batch_size(), 32);
  EXPECT_DOUBLE_EQ(h.top_k_ratio(), 0.05);
  EXPECT_EQ(h.participation_cap(), 1);
  EXPECT_DOUBLE_EQ(h.gamma(), 1.0);
  EXPECT_EQ(h.hidden(), 64);
  EXPECT_EQ(h.latent(), 16);
  EXPECT_FALSE(config->training().has_rounds());  // the plan sets them from the users' caps
  EXPECT_EQ(config->training().seed(), 1u);
  EXPECT_FALSE(config->privacy().has_delta());  // pure epsilon-LDP

  auto vertical = Curator(R"("privacy":{"epsilon":8})");
  ASSERT_TRUE(vertical.ok()) << vertical.status();
  EXPECT_EQ(vertical->topology(), v1::Topology::vertical);
  EXPECT_EQ(vertical->privacy().mode(), v1::PrivacyConfig::marginals);
}

TEST(HorizontalConfigTest, SettingsOfTheOtherTopologyAreRefusedNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("topology":"horizontal","privacy":{"mode":"strict","epsilon":8})", "vertical mode"},
      {R"("topology":"horizontal","privacy":{})", "needs privacy.epsilon"},
      {R"("topology":"horizontal","privacy":{"epsilon":8,"delta":1e-5})",
       "privacy.delta does not apply"},
      {R"("topology":"horizontal","privacy":{"epsilon":8,"noise_multiplier":1})",
       "privacy.noise_multiplier"},
      {R"("topology":"horizontal","privacy":{"epsilon":8},"model":{"z_dim":8})",
       "model.z_dim does not apply"},
      {R"("topology":"horizontal","privacy":{"epsilon":8},"training":{"batch_size":8})",
       "training.batch_size"},
      {R"("topology":"horizontal","privacy":{"epsilon":8},"output":{"label_column":"x"})",
       "output.label_column"},
      {R"("privacy":{"mode":"signds","epsilon":8})", "needs topology 'horizontal'"},
      {R"("privacy":{"mode":"dpfedavg","epsilon":8})", "needs topology 'horizontal'"},
      {R"("topology":"horizontal","privacy":{"mode":"dpfedavg","epsilon":8},"horizontal":{"participation_cap":2})",
       "horizontal.participation_cap does not apply"},
      {R"("topology":"horizontal","privacy":{"mode":"dpfedavg","epsilon":8,"clip_norm":0})",
       "privacy.clip_norm"},
      {R"("topology":"horizontal","privacy":{"mode":"dpfedavg","epsilon":8,"feature_clip_norm":1})",
       "privacy.feature_clip_norm does not apply"},
      {R"("privacy":{"epsilon":8},"horizontal":{"users_per_round":5})",
       "'horizontal' needs topology"},
      {R"("topology":"horizontal","privacy":{"epsilon":8},"horizontal":{"top_k_ratio":1})",
       "top_k_ratio"},
      {R"("topology":"horizontal","privacy":{"epsilon":8},"horizontal":{"local_batch_size":1})",
       "pairs"},
      {R"("topology":"horizontal","privacy":{"epsilon":8},"horizontal":{"participation_cap":0})",
       "participation_cap"},
      {R"("topology":"horizontal","privacy":{"epsilon":8},"horizontal":{"hidden":100000})",
       "horizontal.hidden"},
  };
  for (const auto& [json, message] : cases) {
    const auto config = Curator(json);
    ASSERT_FALSE(config.ok()) << json;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(config.status().message(), HasSubstr(message)) << json;
  }
}

TEST(HorizontalConfigTest, AHorizontalPartyNeedsNoSharedSecretsAndRefusesThem) {
  auto party = Party(R"("topology":"horizontal","privacy":{"epsilon":4})");
  ASSERT_TRUE(party.ok()) << party.status();
  EXPECT_EQ(party->privacy().mode(), v1::PrivacyConfig::signds);
  EXPECT_EQ(party->privacy().ledger(), "/base/a.csv.ledger");
  const auto with_secrets =
      Party(R"("topology":"horizontal","secrets":"s.txt","privacy":{"epsilon":4})");
  ASSERT_FALSE(with_secrets.ok());
  EXPECT_THAT(with_secrets.status().message(), HasSubstr("secrets does not apply"));
  const auto vertical = Party(R"("privacy":{"epsilon":4})");
  ASSERT_FALSE(vertical.ok());
  EXPECT_THAT(vertical.status().message(), HasSubstr("secrets is required"));
}

TEST(HorizontalConfigTest, DpFedAvgTakesItsOwnDefaultsAndNoSignDsSetting) {
  auto config = Curator(R"("topology":"horizontal","privacy":{"mode":"dpfedavg","epsilon":8})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->privacy().mode(), v1::PrivacyConfig::dpfedavg);
  EXPECT_DOUBLE_EQ(config->privacy().clip_norm(), 0.01);
  // One epoch of SGD at 0.1 locally, the curator's FedAdam at 3e-3.
  EXPECT_EQ(config->horizontal().local_epochs(), 1);
  EXPECT_DOUBLE_EQ(config->horizontal().local_learning_rate(), 0.1);
  EXPECT_DOUBLE_EQ(config->horizontal().gamma(), 3e-3);
  EXPECT_DOUBLE_EQ(config->privacy().delta(), 1e-5);
  EXPECT_FALSE(config->privacy().has_noise_multiplier());
  EXPECT_FALSE(config->horizontal().has_participation_cap());
  EXPECT_FALSE(config->horizontal().has_top_k_ratio());
  EXPECT_EQ(config->horizontal().users_per_round(), 1000);
  // The party resolves the settings it is sent again: that changes nothing.
  v1::PrivacyConfig privacy = config->privacy();
  v1::HorizontalConfig horizontal = config->horizontal();
  ASSERT_TRUE(ResolveHorizontalPrivacy(&privacy).ok());
  ASSERT_TRUE(ResolveHorizontalConfig(&horizontal, privacy.mode()).ok());
  EXPECT_EQ(privacy.SerializeAsString(), config->privacy().SerializeAsString());
  EXPECT_EQ(horizontal.SerializeAsString(), config->horizontal().SerializeAsString());
}

}  // namespace
}  // namespace vfsynth
