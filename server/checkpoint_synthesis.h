#ifndef VFSYNTH_SERVER_CHECKPOINT_SYNTHESIS_H_
#define VFSYNTH_SERVER_CHECKPOINT_SYNTHESIS_H_

// Drawing a table from a curator checkpoint without a run (`vfsynth synthesize`).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "common/data/encoder.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// config.output().rows() rows from G as saved in the checkpoint at `path` (the config's
// own, CuratorCheckpointPath, if empty), with the config's publication settings
// (output.label_column / label_temperature): the table the curator would publish from
// that state. `encoders` are the parties' public schemas' encoders in roster order. A
// checkpoint of another run or configuration is refused (FAILED_PRECONDITION).
absl::StatusOr<CsvTable> SynthesizeFromCheckpoint(const v1::CuratorConfig& config,
                                                  const std::vector<const TableEncoder*>& encoders,
                                                  const std::string& path);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CHECKPOINT_SYNTHESIS_H_
