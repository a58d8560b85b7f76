#ifndef VFSYNTH_COMMON_CHECKPOINT_RUN_NONCE_H_
#define VFSYNTH_COMMON_CHECKPOINT_RUN_NONCE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace vfsynth {

// A run id names a job, and an operator may start the same job twice. The curator draws
// a random nonce when it starts a run afresh and binds every checkpoint to it; each party
// keeps the nonce it joined under. State of one start is then never resumed against
// another's (a curator checkpoint copied from another start, or a curator started afresh
// under parties that hold state). Kept at <checkpoint_dir>/run.nonce, one per directory.

std::string RunNoncePath(const std::string& checkpoint_dir);

// The nonce kept at `path` for `run_id`; nullopt if there is none, or if the file names
// another run (the directory then belongs to no state of this run).
absl::StatusOr<std::optional<std::string>> KeptRunNonce(const std::string& path,
                                                        const std::string& run_id);

// Keeps `nonce` for `run_id` at `path`, atomically and durably (creates the directory).
absl::Status KeepRunNonce(const std::string& path, const std::string& run_id,
                          const std::string& nonce);

// A nonce is a NewHexSecret (common/random/secure_random.h). FAILED_PRECONDITION if
// `nonce` (from the curator) is not one: a party refuses a run that does not name its
// start.
absl::Status CheckRunNonce(const std::string& nonce);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_CHECKPOINT_RUN_NONCE_H_
