#include "server/checkpoint_synthesis.h"

#include <spdlog/spdlog.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "common/model/curator_model.h"
#include "common/model/model_factory.h"
#include "common/model/model_state.h"
#include "common/util/checkpoint_file.h"
#include "common/util/status_macros.h"
#include "server/curator_checkpoint.h"

namespace vfsynth {

absl::StatusOr<CsvTable> SynthesizeFromCheckpoint(const v1::CuratorConfig& config,
                                                  const std::vector<const TableEncoder*>& encoders,
                                                  const std::string& path_or_empty) {
  if (config.output().rows() <= 0 || config.output().rows() > kMaxSynthesisRows) {
    return absl::InvalidArgumentError(absl::StrCat("rows must be in [1, ", kMaxSynthesisRows, "]"));
  }
  if (static_cast<int>(encoders.size()) != config.parties_size()) {
    return absl::InvalidArgumentError(absl::StrCat(encoders.size(), " schemas for a roster of ",
                                                   config.parties_size(), " parties (one each, in order)"));
  }
  using Temperatures = std::map<int, double>;
  ASSIGN_OR_RETURN(const Temperatures temperature, PublicationTemperatures(config.output(), encoders));
  RETURN_IF_ERROR(CheckConditionedColumn(config.model(), config.training(), encoders));
  const std::string path = path_or_empty.empty() ? CuratorCheckpointPath(config) : path_or_empty;
  ASSIGN_OR_RETURN(const Checkpoint checkpoint, ReadCheckpoint(path));
  // The aligned records are not known here; everything else must be this config's.
  RETURN_IF_ERROR(CheckCuratorCheckpointHeader(checkpoint.header, config, checkpoint.header.data_digest(), path));
  if (checkpoint.header.round() < config.training().rounds()) {
    spdlog::warn("checkpoint {} is at round {} of {}: the table comes from an unfinished run", path,
                 checkpoint.header.round(), config.training().rounds());
  }
  try {
    CuratorModel model(config.model(), config.training(), encoders);
    RETURN_IF_ERROR(RestoreCuratorState(checkpoint.payload, model));
    return DecodeJoint(
        SampleSynthetic(model.published_generator(), config.training().seed(), config.output().rows(), temperature),
        encoders);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("LibTorch error: ", e.what_without_backtrace()));
  }
}

}  // namespace vfsynth
