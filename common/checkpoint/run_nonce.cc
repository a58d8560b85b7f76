#include "common/checkpoint/run_nonce.h"

#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/format_header.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/random/secure_random.h"

namespace vfsynth {
namespace {

constexpr FileFormat kFormat = {"RUN-NONCE", "run nonce", 1};

}  // namespace

std::string RunNoncePath(const std::string& checkpoint_dir) {
  return (std::filesystem::path(checkpoint_dir) / "run.nonce").string();
}

absl::StatusOr<std::optional<std::string>> KeptRunNonce(const std::string& path,
                                                        const std::string& run_id) {
  if (!std::filesystem::exists(path)) return std::optional<std::string>();
  ASSIGN_OR_RETURN(const std::string contents, ReadFile(path));
  ASSIGN_OR_RETURN(const absl::string_view body, BodyAfterHeader(kFormat, path, contents));
  // "run <SHA-256 of the run id> <nonce>\n"
  const std::vector<absl::string_view> fields = absl::StrSplit(body, ' ');
  if (fields.size() != 3 || fields[0] != "run" || fields[1].size() != 64 ||
      !absl::EndsWith(fields[2], "\n") || !IsHexSecret(fields[2].substr(0, fields[2].size() - 1))) {
    return absl::DataLossError(absl::StrCat(path, " is damaged (not one line 'run <digest> <nonce>')"));
  }
  if (fields[1] != Sha256Hex(run_id)) return std::optional<std::string>();
  return std::optional<std::string>(fields[2].substr(0, fields[2].size() - 1));
}

absl::Status KeepRunNonce(const std::string& path, const std::string& run_id,
                          const std::string& nonce) {
  RETURN_IF_ERROR(CheckRunNonce(nonce));
  RETURN_IF_ERROR(MakeDirectories(std::filesystem::path(path).parent_path().string()));
  return WriteFileAtomically(
      path, absl::StrCat(FormatHeader(kFormat), "run ", Sha256Hex(run_id), " ", nonce, "\n"));
}

absl::Status CheckRunNonce(const std::string& nonce) {
  if (IsHexSecret(nonce)) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "the curator names no valid run nonce (64 hex digits drawn when it started the run)");
}

}  // namespace vfsynth
