#ifndef VFSYNTH_SERVER_CORE_CURATOR_CHECKPOINT_H_
#define VFSYNTH_SERVER_CORE_CURATOR_CHECKPOINT_H_

// Where the curator's checkpoint lives and what it must say to be resumed
// (docs/operations.md, "Failure handling").

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vfsynth/v1/checkpoint.pb.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

std::string CuratorCheckpointPath(const v1::CuratorConfig& config);
// <checkpoint_dir>/noise.key: the key of D_s's DP noise in dpsgd (mode 0600), apart from
// the checkpoint so that the checkpoint can be handed on without it.
std::string NoiseKeyPath(const v1::CuratorConfig& config);

// Startup check, before any party joins: with --resume the checkpoint must exist;
// without it there must be none (starting over would overwrite it). Both errors say
// what to do. Returns the run's nonce (common/checkpoint/run_nonce.h): the checkpoint's
// when resuming, else the one kept for this run (a start that stopped before its first
// checkpoint) or a new one, kept at RunNoncePath.
absl::StatusOr<std::string> CheckCuratorCheckpointOnStartup(const v1::CuratorConfig& config,
                                                             bool resume);

// Digest of what the curator knows of the data: the number of aligned records and the
// parties' public schemas (roster order). The parties' checkpoints pin which records.
std::string CuratorDataDigest(int64_t records, const std::vector<v1::Schema>& schemas);

// The header a checkpoint of this run (started with `run_nonce`), configuration and data
// carries.
v1::CheckpointHeader CuratorCheckpointHeader(const v1::CuratorConfig& config,
                                             const std::string& run_nonce,
                                             const std::string& data_digest, int64_t round);

// OK if `found` (read from `path`) is a checkpoint of this run, configuration and data.
// A digest only says that some setting differs; where the checkpoint's is this
// configuration's as builds before a setting existed hashed it, the error names the
// values that resume it.
absl::Status CheckCuratorCheckpointHeader(const v1::CheckpointHeader& found,
                                          const v1::CuratorConfig& config,
                                          const std::string& run_nonce,
                                          const std::string& data_digest, const std::string& path);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_CURATOR_CHECKPOINT_H_
