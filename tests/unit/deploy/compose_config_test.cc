// The compose and Kubernetes set-ups' configs are the daemons' proto JSON: they must
// load with the same loaders (unknown fields are errors), name the layout's parties,
// and agree on the run's privacy settings, or the containers would fail at start or at
// Register.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "common/base/proto_json.h"
#include "common/config/config.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {
namespace {

const std::string kDeploy = std::string(VFSYNTH_SOURCE_DIR) + "/deploy";

std::vector<std::string> LayoutParties() {
  v1::PartiesFile layout;
  EXPECT_TRUE(LoadJsonFile(kDeploy + "/parties/adult-3.json", &layout).ok());
  std::vector<std::string> names;
  for (const auto& party : layout.parties()) names.push_back(party.name());
  return names;
}

TEST(ComposeConfigTest, CuratorConfigLoadsWithTheLayoutsRoster) {
  auto curator = LoadCuratorConfig(kDeploy + "/compose/curator.json");
  ASSERT_TRUE(curator.ok()) << curator.status();
  EXPECT_EQ(std::vector<std::string>(curator->parties().begin(), curator->parties().end()),
            LayoutParties());
  EXPECT_FALSE(curator->plaintext());
  EXPECT_EQ(curator->tls().key(), "/var/lib/vfsynth/tls/curator.key");
  EXPECT_EQ(curator->listen(), "0.0.0.0:50051");
}

// Each party config of a set-up loads, names its party and the curator's address, and
// declares the curator's privacy settings.
void ExpectPartyConfigsAgreeWithTheCurator(const std::string& curator_path,
                                           const std::string& party_dir_pattern,
                                           const std::string& curator_address) {
  auto curator = LoadCuratorConfig(curator_path);
  ASSERT_TRUE(curator.ok()) << curator.status();
  for (const std::string& name : LayoutParties()) {
    SCOPED_TRACE(name);
    auto party = LoadPartyConfig(absl::StrReplaceAll(party_dir_pattern, {{"NAME", name}}));
    ASSERT_TRUE(party.ok()) << party.status();
    EXPECT_EQ(party->name(), name);
    EXPECT_EQ(party->curator(), curator_address);  // a SAN of the curator's certificate
    EXPECT_FALSE(party->plaintext());
    EXPECT_EQ(party->tls().key(), "/var/lib/vfsynth/tls/" + name + ".key");
    EXPECT_EQ(party->privacy().mode(), curator->privacy().mode());
    EXPECT_EQ(party->privacy().epsilon(), curator->privacy().epsilon());
    EXPECT_EQ(party->privacy().delta(), curator->privacy().delta());
  }
}

TEST(ComposeConfigTest, PartyConfigsLoadAndAgreeWithTheCurator) {
  ExpectPartyConfigsAgreeWithTheCurator(kDeploy + "/compose/curator.json",
                                        kDeploy + "/compose/NAME.json", "curator:50051");
}

// The Kubernetes curator also serves the plaintext health port its pod is probed on.
TEST(K8sConfigTest, CuratorConfigLoadsWithAHealthPortBesideTheMtlsOne) {
  auto curator = LoadCuratorConfig(kDeploy + "/k8s/curator/curator.json");
  ASSERT_TRUE(curator.ok()) << curator.status();
  EXPECT_EQ(std::vector<std::string>(curator->parties().begin(), curator->parties().end()),
            LayoutParties());
  EXPECT_FALSE(curator->plaintext());
  EXPECT_EQ(curator->listen(), "0.0.0.0:50051");
  EXPECT_EQ(curator->health_listen(), "0.0.0.0:8080");
}

TEST(K8sConfigTest, PartyConfigsLoadAndAgreeWithTheCurator) {
  ExpectPartyConfigsAgreeWithTheCurator(kDeploy + "/k8s/curator/curator.json",
                                        kDeploy + "/k8s/party/NAME/NAME.json",
                                        "curator.vfsynth.example:50051");
}

}  // namespace
}  // namespace vfsynth
