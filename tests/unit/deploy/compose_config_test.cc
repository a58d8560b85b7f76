// The compose set-up's configs are the daemons' proto JSON: they must load with the
// same loaders (unknown fields are errors), name the layout's parties, and agree on
// the run's privacy settings, or the containers would fail at start or at Register.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(ComposeConfigTest, PartyConfigsLoadAndAgreeWithTheCurator) {
  auto curator = LoadCuratorConfig(kDeploy + "/compose/curator.json");
  ASSERT_TRUE(curator.ok()) << curator.status();
  for (const std::string& name : LayoutParties()) {
    SCOPED_TRACE(name);
    auto party = LoadPartyConfig(kDeploy + "/compose/" + name + ".json");
    ASSERT_TRUE(party.ok()) << party.status();
    EXPECT_EQ(party->name(), name);
    EXPECT_EQ(party->curator(), "curator:50051");  // the curator certificate's DNS:curator SAN
    EXPECT_FALSE(party->plaintext());
    EXPECT_EQ(party->tls().key(), "/var/lib/vfsynth/tls/" + name + ".key");
    EXPECT_EQ(party->privacy().mode(), curator->privacy().mode());
    EXPECT_EQ(party->privacy().epsilon(), curator->privacy().epsilon());
    EXPECT_EQ(party->privacy().delta(), curator->privacy().delta());
  }
}

}  // namespace
}  // namespace vfsynth
