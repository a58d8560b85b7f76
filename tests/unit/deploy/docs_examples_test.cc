// What users copy: every JSON example in docs/ and the example daemon configs in
// deploy/examples/ load with the daemons' own loaders.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/proto_json.h"
#include "common/config/config.h"
#include "common/data/schema.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {
namespace {

const std::string kSource = VFSYNTH_SOURCE_DIR;

struct JsonExample {
  std::string where;  // file:line
  std::string type;   // the message named in the comment before the block
  std::string json;
};

// ```json blocks of the user docs (the frozen lab log is not documentation).
std::vector<JsonExample> DocsJsonExamples() {
  std::vector<JsonExample> examples;
  for (const std::string dir : {"/docs", "/docs/decisions"}) {
    for (const auto& entry : std::filesystem::directory_iterator(kSource + dir)) {
      if (entry.path().extension() != ".md") continue;
      std::ifstream in(entry.path());
      std::string line, previous;
      int number = 0;
      while (std::getline(in, line)) {
        ++number;
        if (line == "```json") {
          JsonExample example{absl::StrCat(entry.path().filename().string(), ":", number), "", ""};
          absl::string_view hint = previous;
          if (absl::ConsumePrefix(&hint, "<!-- ") && absl::ConsumeSuffix(&hint, " -->")) {
            example.type = std::string(hint);
          }
          while (std::getline(in, line) && line != "```") {
            ++number;
            example.json += line + "\n";
          }
          ++number;
          examples.push_back(example);
        }
        previous = line;
      }
    }
  }
  return examples;
}

TEST(DocsExamplesTest, EveryJsonExampleParsesAsTheMessageItNames) {
  const std::vector<JsonExample> examples = DocsJsonExamples();
  ASSERT_GE(examples.size(), 2u);  // docs/data.md: a schema and a parties file
  for (const JsonExample& example : examples) {
    SCOPED_TRACE(example.where);
    ASSERT_TRUE(absl::StartsWith(example.type, "vfsynth.v1."))
        << "a ```json block needs the line <!-- vfsynth.v1.<Message> --> before it";
    const google::protobuf::Descriptor* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(example.type);
    ASSERT_NE(descriptor, nullptr) << example.type;
    std::unique_ptr<google::protobuf::Message> message(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
    const absl::Status parsed = ParseJsonInto(example.json, example.where, message.get());
    EXPECT_TRUE(parsed.ok()) << parsed;
    if (example.type == "vfsynth.v1.Schema") {
      const auto schema = ParseSchema(example.json, example.where);
      EXPECT_TRUE(schema.ok()) << schema.status();
    }
  }
}

// Usable as they are with deploy/gen-certs.sh's file names and `vfsynth split`'s output.
TEST(DocsExamplesTest, ExampleDaemonConfigsLoadAndAgree) {
  const std::string dir = kSource + "/deploy/examples";
  auto curator = LoadCuratorConfig(dir + "/curator.json");
  ASSERT_TRUE(curator.ok()) << curator.status();
  auto party = LoadPartyConfig(dir + "/hospital.json");
  ASSERT_TRUE(party.ok()) << party.status();
  EXPECT_FALSE(curator->plaintext());
  EXPECT_EQ(curator->tls().cert(), dir + "/certs/curator.crt");
  EXPECT_EQ(party->tls().key(), dir + "/certs/hospital.key");
  EXPECT_EQ(party->tls().ca(), curator->tls().ca());
  EXPECT_EQ(party->data(), dir + "/parties/hospital.csv");
  EXPECT_THAT(std::vector<std::string>(curator->parties().begin(), curator->parties().end()),
              ::testing::Contains(party->name()));
  EXPECT_EQ(party->privacy().mode(), curator->privacy().mode());
  EXPECT_EQ(party->privacy().epsilon(), curator->privacy().epsilon());
  EXPECT_EQ(party->privacy().delta(), curator->privacy().delta());
}

}  // namespace
}  // namespace vfsynth
