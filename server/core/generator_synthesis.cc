#include "server/core/generator_synthesis.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/model_state.h"
#include "common/config/config.h"
#include "common/data/encoder.h"
#include "common/gan/model_factory.h"
#include "common/nn/intra_op_threads.h"
#include "common/nn/torch_boundary.h"
#include "server/core/horizontal_model.h"

namespace vfsynth {
namespace {

// The vertical topology's table: the parties' columns side by side from the artefact's G.
absl::StatusOr<CsvTable> SynthesizeFromG(const GeneratorArtefact& artefact,
                                         const std::vector<TableEncoder>& owned,
                                         const v1::OutputConfig& output) {
  const v1::GeneratorHeader& header = artefact.header;
  std::vector<const TableEncoder*> encoders;
  for (const TableEncoder& encoder : owned) encoders.push_back(&encoder);
  v1::ModelConfig model = header.model();
  if (const absl::Status status = ResolveModelConfig(&model); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the generator artefact's model settings: ", status.message()));
  }
  v1::TrainingConfig
      training;  // G's shape depends on model and the encoders; its streams on the seed
  training.set_seed(header.seed());
  RETURN_IF_ERROR(CheckConditionedColumn(model, encoders));
  using Temperatures = std::map<int, double>;
  ASSIGN_OR_RETURN(const Temperatures temperature, PublicationTemperatures(output, encoders));
  Generator generator = MakeGenerator(model, training, encoders);
  RETURN_IF_ERROR(RestorePublishedGenerator(artefact.payload, *generator));
  return SampleSyntheticTable(generator, header.seed(), output.rows(), encoders, temperature);
}

// The horizontal topology's table: every column from the autoencoder's decoder over the
// one schema, drawn as the curator draws the table it publishes (HorizontalModel::Sample).
absl::StatusOr<CsvTable> SynthesizeFromAutoencoder(const GeneratorArtefact& artefact,
                                                   const TableEncoder& encoder,
                                                   const v1::OutputConfig& output) {
  if (!output.label_column().empty()) {
    return absl::InvalidArgumentError(
        "label_column and label_temperature shape the vertical topology's generator; a horizontal "
        "run's "
        "decoder draws every column as it learnt them");
  }
  const v1::HorizontalConfig& settings = artefact.header.horizontal();
  if (settings.hidden() < 1 || settings.latent() < 1) {
    return absl::InvalidArgumentError(
        "the generator artefact's horizontal settings have no hidden or latent width");
  }
  HorizontalModel model(WaeOptions{encoder.width(), settings.hidden(), settings.latent()},
                        /*gamma=*/0, artefact.header.seed());
  if (const absl::Status status = model.RestorePublished(artefact.payload); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("restoring the published autoencoder: ", status.message()));
  }
  return model.Sample(encoder, output.rows(), artefact.header.seed());
}

}  // namespace

absl::Status CheckSynthesisRows(int64_t rows) {
  if (rows <= 0 || rows > kMaxSynthesisRows) {
    return absl::InvalidArgumentError(absl::StrCat("rows must be in [1, ", kMaxSynthesisRows, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CsvTable> SynthesizeFromGenerator(const GeneratorArtefact& artefact,
                                                 const v1::OutputConfig& output) {
  RETURN_IF_ERROR(CheckSynthesisRows(output.rows()));
  // One intra-op thread, as the curator draws the table it publishes (CuratorCore's publication):
  // the redraw is then the same bytes whatever the thread settings.
  ScopedIntraOpThreads one_thread(1);
  if (artefact.header.parties().empty())
    return absl::InvalidArgumentError("the generator artefact names no party");
  std::vector<TableEncoder> encoders;
  for (const v1::PartySchema& party : artefact.header.parties()) {
    absl::StatusOr<TableEncoder> encoder = TableEncoder::Create(party.schema());
    if (!encoder.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("schema of party '", party.name(),
                       "' in the generator artefact: ", encoder.status().message()));
    }
    encoders.push_back(std::move(*encoder));
  }
  return CatchLibTorch<CsvTable>([&] {
    return artefact.header.topology() == v1::Topology::horizontal
               ? SynthesizeFromAutoencoder(artefact, encoders[0], output)
               : SynthesizeFromG(artefact, encoders, output);
  });
}

}  // namespace vfsynth
