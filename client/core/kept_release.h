#ifndef VFSYNTH_CLIENT_CORE_KEPT_RELEASE_H_
#define VFSYNTH_CLIENT_CORE_KEPT_RELEASE_H_

// A release a party draws once per run and keeps in a file under its checkpoint
// directory (labels.release, label_pairs.release) is bound to the ledger charge that
// covers it: the ledger records the file's SHA-256 before the release first leaves,
// and once recorded, the file must be there with those bytes; it is never drawn
// again (docs/privacy.md, "Kept releases").

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/base/status_macros.h"
#include "common/privacy/ledger.h"

namespace vfsynth {

// OK if `ledger` records no release named as `path`'s file (it never left: a draw
// now is covered by the charge) or if `path` holds the recorded bytes;
// FAILED_PRECONDITION naming the file and the ledger if it is missing or differs.
absl::Status CheckKeptRelease(const privacy::PrivacyLedger& ledger, const std::string& path);

// Records the SHA-256 of the durable file at `path` under the charge of `round`.
absl::Status RecordKeptRelease(privacy::PrivacyLedger& ledger, int64_t round,
                               const std::string& path);

// `release` draws the release into `path` or reads the kept one there; bound to
// `ledger`'s charge of `round` before it is handed out to be sent. Without a ledger
// (mode none) nothing is charged and nothing bound.
template <typename Release>
absl::StatusOr<Release> BoundRelease(privacy::PrivacyLedger* ledger, int64_t round,
                                     const std::string& path,
                                     absl::FunctionRef<absl::StatusOr<Release>()> release) {
  if (ledger == nullptr) return release();
  RETURN_IF_ERROR(CheckKeptRelease(*ledger, path));
  ASSIGN_OR_RETURN(Release made, release());
  RETURN_IF_ERROR(RecordKeptRelease(*ledger, round, path));
  return made;
}

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_KEPT_RELEASE_H_
