#include "client/core/alignment_secret.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/random/secure_random.h"

namespace vfsynth {
namespace {

constexpr char kMagic[] = "vfsynth-alignment-secret";
constexpr int kFormatVersion = 1;

// The file's lines after the header ("run <SHA-256 of the run id> <secret>"); none if
// it is absent.
absl::StatusOr<std::vector<std::string>> SecretLines(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::vector<std::string>();
  ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  bool valid = !lines.empty() && lines[0] == absl::StrCat(kMagic, " ", kFormatVersion);
  for (size_t i = 1; valid && i < lines.size(); ++i) {
    const std::vector<std::string> fields = absl::StrSplit(lines[i], ' ');
    valid = fields.size() == 3 && fields[0] == "run" && IsHexSecret(fields[2]);
  }
  if (!valid) {
    return absl::DataLossError(absl::StrCat(
        path, " is not a file of alignment secrets (", kMagic, " format version ", kFormatVersion,
        "); it holds the secret of this party's alignment list in each run it started, and a "
        "run it was aligning in cannot continue without it"));
  }
  lines.erase(lines.begin());
  return lines;
}

// The secret `lines` keep for `run_id`, if any.
std::optional<std::string> SecretOfRun(const std::vector<std::string>& lines,
                                       const std::string& run_id) {
  const std::string run = absl::StrCat("run ", Sha256Hex(run_id), " ");
  for (const std::string& line : lines) {
    if (absl::StartsWith(line, run)) return line.substr(run.size());
  }
  return std::nullopt;
}

}  // namespace

std::string AlignmentSecretPath(const v1::PartyConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "alignment.secret").string();
}

std::string PartySecretPath(const v1::PartyConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "party.secret").string();
}

absl::StatusOr<std::optional<std::string>> KeptAlignmentSecret(const std::string& path,
                                                               const std::string& run_id) {
  ASSIGN_OR_RETURN(const std::vector<std::string> lines, SecretLines(path));
  return SecretOfRun(lines, run_id);
}

absl::StatusOr<std::string> KeptOrNewAlignmentSecret(const std::string& path,
                                                     const std::string& run_id) {
  ASSIGN_OR_RETURN(const std::vector<std::string> lines, SecretLines(path));
  if (std::optional<std::string> kept = SecretOfRun(lines, run_id)) return *std::move(kept);
  ASSIGN_OR_RETURN(std::string secret, NewHexSecret());
  std::string text = absl::StrCat(kMagic, " ", kFormatVersion, "\n");
  for (const std::string& line : lines) absl::StrAppend(&text, line, "\n");
  absl::StrAppend(&text, "run ", Sha256Hex(run_id), " ", secret, "\n");
  RETURN_IF_ERROR(MakeDirectories(std::filesystem::path(path).parent_path().string()));
  RETURN_IF_ERROR(WritePrivateFile(path, text));
  return secret;
}

absl::Status NothingToResume(const v1::PartyConfig& config, const std::string& run_id,
                             absl::Status missing) {
  const std::string path = AlignmentSecretPath(config);
  const absl::StatusOr<std::optional<std::string>> kept = KeptAlignmentSecret(path, run_id);
  if (!kept.ok() || !kept->has_value()) return missing;
  return absl::FailedPreconditionError(absl::StrCat(
      "--resume: this party stopped during the alignment of run '", run_id,
      "', before it wrote any state to resume: start it without --resume (it sends the same "
      "alignment list again, from the secret kept in ",
      path, ")"));
}

}  // namespace vfsynth
