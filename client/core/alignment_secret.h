#ifndef VFSYNTH_CLIENT_CORE_ALIGNMENT_SECRET_H_
#define VFSYNTH_CLIENT_CORE_ALIGNMENT_SECRET_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// A vertical party's secret for a run (its alignment list, and in the GAN modes its
// networks, derive from it), kept per run in checkpoint_dir/alignment.secret (mode 0600,
// written atomically and durably) before its list leaves. A party restarted during
// alignment then sends the identical list, which its successor, keeping the hops it
// answered (answered_hops.h), answers identically; with a new secret the run could
// not go on. party.secret, written once aligned, holds the same secret.
std::string AlignmentSecretPath(const v1::PartyConfig& config);
// checkpoint_dir/party.secret.
std::string PartySecretPath(const v1::PartyConfig& config);

// The secret kept for `run_id` in the file `path`, if any.
absl::StatusOr<std::optional<std::string>> KeptAlignmentSecret(const std::string& path,
                                                               const std::string& run_id);

// A fresh start in `run_id`: the secret kept for it, or a new one, durably kept before
// it is returned.
absl::StatusOr<std::string> KeptOrNewAlignmentSecret(const std::string& path,
                                                     const std::string& run_id);

// --resume found nothing a completed alignment leaves (`missing`, its error): a party
// that kept a secret for `run_id` stopped during alignment, and the error says to start
// it without --resume; otherwise `missing`.
absl::Status NothingToResume(const v1::PartyConfig& config, const std::string& run_id,
                             absl::Status missing);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_ALIGNMENT_SECRET_H_
