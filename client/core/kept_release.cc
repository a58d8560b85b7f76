#include "client/core/kept_release.h"

#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/sha256.h"

namespace vfsynth {
namespace {

std::string ReleaseName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

absl::Status CheckKeptRelease(const privacy::PrivacyLedger& ledger, const std::string& path) {
  const std::optional<std::string> recorded = ledger.ReleaseDigest(ReleaseName(path));
  if (!recorded.has_value()) return absl::OkStatus();
  const absl::StatusOr<std::string> kept = ReadFile(path);
  if (!kept.ok() && !absl::IsNotFound(kept.status())) return kept.status();
  const std::string found = kept.ok() ? Sha256Hex(*kept) : "";
  if (found == *recorded) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the kept release ", path,
      kept.ok() ? absl::StrCat(" (SHA-256 ", found, ") is not") : " is missing, but it is",
      " the release privacy ledger ", ledger.path(), " records under its charge (SHA-256 ",
      *recorded,
      "): a new draw would be released without being counted. Restore the file from a backup of "
      "the checkpoint "
      "directory, or start a new run (another run_id) with a new ledger"));
}

absl::Status RecordKeptRelease(privacy::PrivacyLedger& ledger, int64_t round,
                               const std::string& path) {
  ASSIGN_OR_RETURN(const std::string kept, ReadFile(path));
  return ledger.RecordRelease(round, ReleaseName(path), Sha256Hex(kept));
}

}  // namespace vfsynth
