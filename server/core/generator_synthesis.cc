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

namespace vfsynth {

absl::StatusOr<CsvTable> SynthesizeFromGenerator(const GeneratorArtefact& artefact, const v1::OutputConfig& output) {
  if (output.rows() <= 0 || output.rows() > kMaxSynthesisRows) {
    return absl::InvalidArgumentError(absl::StrCat("rows must be in [1, ", kMaxSynthesisRows, "]"));
  }
  // One intra-op thread, as the curator draws the table it publishes (CuratorCore::Run):
  // the redraw is then the same bytes whatever the thread settings.
  ScopedIntraOpThreads one_thread(1);
  const v1::GeneratorHeader& header = artefact.header;
  if (header.parties().empty()) return absl::InvalidArgumentError("the generator artefact names no party");
  std::vector<TableEncoder> owned;
  for (const v1::PartySchema& party : header.parties()) {
    absl::StatusOr<TableEncoder> encoder = TableEncoder::Create(party.schema());
    if (!encoder.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("schema of party '", party.name(), "' in the generator artefact: ", encoder.status().message()));
    }
    owned.push_back(std::move(*encoder));
  }
  std::vector<const TableEncoder*> encoders;
  for (const TableEncoder& encoder : owned) encoders.push_back(&encoder);
  v1::ModelConfig model = header.model();
  if (const absl::Status status = ResolveModelConfig(&model); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the generator artefact's model settings: ", status.message()));
  }
  v1::TrainingConfig training;  // G's shape depends on model and the encoders; its streams on the seed
  training.set_seed(header.seed());
  RETURN_IF_ERROR(CheckConditionedColumn(model, encoders));
  using Temperatures = std::map<int, double>;
  ASSIGN_OR_RETURN(const Temperatures temperature, PublicationTemperatures(output, encoders));
  try {
    Generator generator = MakeGenerator(model, training, encoders);
    RETURN_IF_ERROR(RestorePublishedGenerator(artefact.payload, *generator));
    return DecodeJoint(SampleSynthetic(generator, header.seed(), output.rows(), temperature), encoders);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("LibTorch error: ", e.what_without_backtrace()));
  }
}

}  // namespace vfsynth
