#ifndef VFSYNTH_COMMON_DATA_ALIGNMENT_H_
#define VFSYNTH_COMMON_DATA_ALIGNMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth {

// Alignment tokens: HMAC-SHA256(alignment_key, id) under the key the parties share.
// They never leave the parties: a distributed run finds the common records by PSI
// (psi.h) and each party sorts its common records by token, the canonical order every
// party and the reference trainer (which intersects tokens in one process) share.

// Lower-case hex HMAC-SHA256 of `id` under `key`.
std::string AlignmentToken(absl::string_view key, absl::string_view id);

// Tokens of all ids; errors if two ids collide (duplicate ids in one party).
absl::StatusOr<std::vector<std::string>> AlignmentTokens(absl::string_view key,
                                                         const std::vector<std::string>& ids);

// Sorted intersection of every party's token list.
std::vector<std::string> IntersectTokens(const std::vector<std::vector<std::string>>& per_party);

// For each common token, the index of the row carrying it in `tokens`. Errors if a
// common token is absent from `tokens`.
absl::StatusOr<std::vector<int64_t>> RowOrder(const std::vector<std::string>& tokens,
                                              const std::vector<std::string>& common);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_ALIGNMENT_H_
