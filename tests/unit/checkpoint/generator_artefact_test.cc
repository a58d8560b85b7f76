// The publishable generator artefact's container: round trip, and a clear refusal of
// whatever is not an intact artefact of this format version (another file, the
// curator's private checkpoint, damage, another version), never a crash.
#include "server/core/generator_artefact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <utility>
#include <vector>

#include "common/base/file_io.h"
#include "common/checkpoint/checkpoint_file.h"
#include "common/config/config.h"
#include "server/core/generator_synthesis.h"
#include "server/core/horizontal_model.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Dir() {
  const std::string dir = ::testing::TempDir() + "/generator_artefact_test";
  EXPECT_TRUE(MakeDirectories(dir).ok());
  return dir;
}

GeneratorArtefact Artefact() {
  v1::CuratorConfig config;
  config.set_run_id("run-7");
  config.add_parties("alpha");
  config.mutable_training()->set_rounds(10);
  config.mutable_training()->set_seed(3);
  config.mutable_training()->set_label_column("a");
  config.mutable_output()->set_label_column("a");
  config.mutable_output()->set_label_temperature(0.5);
  EXPECT_TRUE(ResolveModelConfig(config.mutable_model()).ok());
  ResolveConditionedColumn(config.training(), config.mutable_model());
  v1::Schema schema;
  v1::Column* column = schema.add_columns();
  column->set_name("a");
  column->set_type("categorical");
  column->add_categories("x");
  column->add_categories("y");
  v1::PrivacyPlan plan;
  plan.mutable_privacy()->set_mode(v1::PrivacyConfig::strict);
  v1::ObserverGuarantee* published = plan.add_guarantees();
  published->set_observer("published");
  published->set_epsilon_planned(10);
  GeneratorArtefact artefact{MakeGeneratorHeader(config, {schema}, 123, plan),
                             std::string("G\0\n\xff weights", 12)};
  artefact.header.set_round(4);
  return artefact;
}

// Writes `artefact`, lets `edit` change the file's bytes, and reads it back.
absl::StatusOr<GeneratorArtefact> WrittenAndRead(const std::string& name,
                                                 const std::function<void(std::string&)>& edit) {
  const std::string path = Dir() + "/" + name;
  EXPECT_TRUE(WriteGeneratorArtefact(path, Artefact()).ok());
  std::string bytes = ReadFile(path).value_or("");
  edit(bytes);
  EXPECT_TRUE(WriteFileAtomically(path, bytes).ok());
  return ReadGeneratorArtefact(path);
}

TEST(GeneratorArtefactTest, RoundTripKeepsThePublicSettingsAndThePayload) {
  const absl::StatusOr<GeneratorArtefact> read =
      WrittenAndRead("roundtrip.vfsg", [](std::string&) {});
  ASSERT_TRUE(read.ok()) << read.status();
  const GeneratorArtefact written = Artefact();
  EXPECT_EQ(read->header.SerializeAsString(), written.header.SerializeAsString());
  EXPECT_EQ(read->payload, written.payload);
  EXPECT_EQ(read->header.round(), 4);
  EXPECT_EQ(read->header.rounds(), 10);
  EXPECT_EQ(read->header.model().experimental().conditioned_column(),
            "a");  // resolved from training.label_column
  EXPECT_EQ(read->header.output().rows(), 123);
  ASSERT_EQ(read->header.parties_size(), 1);
  EXPECT_EQ(read->header.parties(0).name(), "alpha");
  // The artefact states what a table drawn from it guarantees.
  ASSERT_EQ(read->header.privacy().guarantees_size(), 1);
  EXPECT_EQ(read->header.privacy().guarantees(0).epsilon_planned(), 10);
}

TEST(GeneratorArtefactTest, AnotherFormatVersionIsRefusedNamingBoth) {
  const absl::Status status = WrittenAndRead("version.vfsg", [](std::string& bytes) {
                                bytes.replace(0, bytes.find('\n'), "VFSYNTH-GENERATOR 2");
                              }).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("version.vfsg"), HasSubstr("format version 2"),
                                      HasSubstr("reads version 1")));
}

TEST(GeneratorArtefactTest, DamageAnywhereIsDataLoss) {
  for (const auto& [name, edit] :
       std::vector<std::pair<std::string, std::function<void(std::string&)>>>{
           {"payload", [](std::string& bytes) { bytes.back() ^= 1; }},
           {"header", [](std::string& bytes) { bytes[bytes.size() / 2] ^= 0x40; }},
           {"truncated", [](std::string& bytes) { bytes.resize(bytes.size() - 3); }},
           {"checksum", [](std::string& bytes) { bytes[bytes.find('\n') + 5] ^= 1; }},
       }) {
    const absl::Status status = WrittenAndRead(name + ".vfsg", edit).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << name << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr("damaged")) << name;
  }
}

TEST(GeneratorArtefactTest, OtherFilesAreRefusedClearly) {
  const std::string csv = Dir() + "/table.csv";
  ASSERT_TRUE(WriteFileAtomically(csv, "a,b\n1,2\n").ok());
  absl::Status status = ReadGeneratorArtefact(csv).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("is not a vfsynth generator artefact"));
  status = WrittenAndRead("empty.vfsg", [](std::string& bytes) { bytes.clear(); }).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadGeneratorArtefact(Dir() + "/missing.vfsg").status().code(),
            absl::StatusCode::kNotFound);

  // The curator's private checkpoint: refused, naming the artefact beside it.
  const std::string checkpoint = Dir() + "/curator.ckpt";
  v1::CheckpointHeader header;
  header.set_kind("curator");
  ASSERT_TRUE(WriteCheckpoint(checkpoint, header, "G, D_s and both optimisers").ok());
  status = ReadGeneratorArtefact(checkpoint).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("curator.ckpt is a curator checkpoint"),
                                      HasSubstr("private"), HasSubstr(Dir() + "/generator.vfsg")));
}

// An intact file whose payload is no generator of its settings is an error, not a crash.
TEST(GeneratorArtefactTest, SynthesisRefusesAPayloadThatIsNotItsGenerator) {
  const absl::StatusOr<GeneratorArtefact> artefact =
      WrittenAndRead("stub.vfsg", [](std::string&) {});
  ASSERT_TRUE(artefact.ok()) << artefact.status();
  v1::OutputConfig output = artefact->header.output();
  const absl::Status status = SynthesizeFromGenerator(*artefact, output).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("restoring the published generator"));
}

// A horizontal run's artefact holds the autoencoder, whose decoder redraws the table the
// curator publishes from it (HorizontalModel::Sample, same rows and seed).
TEST(GeneratorArtefactTest, HorizontalArtefactRedrawsTheAutoencodersTable) {
  v1::CuratorConfig config;
  config.set_run_id("rows-apart");
  config.set_topology(v1::Topology::horizontal);
  config.add_parties("alpha");
  config.add_parties("beta");
  config.mutable_horizontal()->set_hidden(8);
  config.mutable_horizontal()->set_latent(3);
  config.mutable_training()->set_seed(5);
  v1::Schema schema;
  v1::Column* category = schema.add_columns();
  category->set_name("a");
  category->set_type("categorical");
  for (const char* value : {"x", "y", "z"}) category->add_categories(value);
  v1::Column* number = schema.add_columns();
  number->set_name("b");
  number->set_type("continuous");
  number->set_min(0);
  number->set_max(10);
  const absl::StatusOr<TableEncoder> encoder = TableEncoder::Create(schema);
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  v1::PrivacyPlan plan;
  plan.set_rounds(7);
  // Trained weights, not the ones the header's seed would initialise.
  const HorizontalModel trained(WaeOptions{encoder->width(), 8, 3}, /*gamma=*/1, /*seed=*/9);
  const std::string path = Dir() + "/horizontal.vfsg";
  ASSERT_TRUE(WriteGeneratorArtefact(path, {MakeGeneratorHeader(config, {schema, schema}, 40, plan),
                                            trained.SavePublished()})
                  .ok());
  absl::StatusOr<GeneratorArtefact> artefact = ReadGeneratorArtefact(path);
  ASSERT_TRUE(artefact.ok()) << artefact.status();
  EXPECT_EQ(artefact->header.topology(), v1::Topology::horizontal);
  EXPECT_EQ(artefact->header.rounds(), 7);
  EXPECT_FALSE(artefact->header.has_model());

  const absl::StatusOr<CsvTable> redrawn =
      SynthesizeFromGenerator(*artefact, artefact->header.output());
  ASSERT_TRUE(redrawn.ok()) << redrawn.status();
  const CsvTable published = trained.Sample(*encoder, 40, 5);
  EXPECT_EQ(redrawn->header, published.header);
  EXPECT_EQ(redrawn->rows, published.rows);
  const HorizontalModel untrained(WaeOptions{encoder->width(), 8, 3}, 1, 5);
  EXPECT_NE(untrained.Sample(*encoder, 40, 5).rows, published.rows);

  v1::OutputConfig labelled = artefact->header.output();
  labelled.set_label_column("a");
  absl::Status status = SynthesizeFromGenerator(*artefact, labelled).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("horizontal run's decoder"));
  artefact->payload = HorizontalModel(WaeOptions{encoder->width(), 9, 3}, 1, 5).SavePublished();
  status = SynthesizeFromGenerator(*artefact, artefact->header.output()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("restoring the published autoencoder"));
}

}  // namespace
}  // namespace vfsynth
