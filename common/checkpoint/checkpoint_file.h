#ifndef VFSYNTH_COMMON_CHECKPOINT_CHECKPOINT_FILE_H_
#define VFSYNTH_COMMON_CHECKPOINT_CHECKPOINT_FILE_H_

// A checkpoint file: magic, a CheckpointHeader saying what the payload belongs to
// (run, round/step, digests of the configuration and the aligned data) and the
// payload (a LibTorch archive; see common/checkpoint/model_state.h). Written atomically
// (temp file, fsync, rename, directory fsync): a reader sees the previous or the new
// checkpoint, never part of one.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vfsynth/v1/checkpoint.pb.h"

namespace vfsynth {

inline constexpr uint32_t kCheckpointFormatVersion = 5;

struct Checkpoint {
  v1::CheckpointHeader header;
  std::string payload;
};

// Sets header.format_version and header.payload_sha256, then writes atomically.
absl::Status WriteCheckpoint(const std::string& path, v1::CheckpointHeader header,
                             absl::string_view payload);

// NOT_FOUND if there is no file; DATA_LOSS if it is not a checkpoint or is damaged;
// FAILED_PRECONDITION for a format version this build does not read.
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);

// Whether `contents` starts like a checkpoint file (whatever its version or state).
bool IsCheckpointFile(absl::string_view contents);

// FAILED_PRECONDITION naming `path` and the first difference if `found` is not a
// checkpoint of `expected`'s kind, run (and its start), secrets, configuration and data.
absl::Status CheckCheckpointMatches(const v1::CheckpointHeader& found,
                                    const v1::CheckpointHeader& expected, const std::string& path);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_CHECKPOINT_CHECKPOINT_FILE_H_
