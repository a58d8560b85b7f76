#include "client/core/answered_hops.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

constexpr char kMagic[] = "vfsynth-answered-hops";
constexpr int kFormatVersion = 2;

std::string HopLine(const std::string& run, int hop, const std::string& digest) {
  return absl::StrCat("hop ", run, " ", hop, " ", digest, "\n");
}

}  // namespace

absl::StatusOr<AnsweredHops> AnsweredHops::Load(std::string path, const std::string& run_id) {
  AnsweredHops answered(std::move(path), Sha256Hex(run_id));
  if (!std::filesystem::exists(answered.path_)) return answered;
  ASSIGN_OR_RETURN(const std::string text, ReadFile(answered.path_));
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  auto corrupt = [&](size_t line) {
    return absl::DataLossError(absl::StrCat(
        answered.path_, " line ", line + 1, " is not one of a list of answered alignment hops (",
        kMagic, " format version ", kFormatVersion,
        "): this party cannot tell which lists it blinded; it blinds nothing more until the file "
        "is repaired or the run is started over under another run id"));
  };
  if (lines.empty() || lines[0] != absl::StrCat(kMagic, " ", kFormatVersion)) return corrupt(0);
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> fields = absl::StrSplit(lines[i], ' ');
    int hop = 0;
    if (fields.size() != 4 || fields[0] != "hop" || !absl::SimpleAtoi(fields[2], &hop) ||
        hop < 1 || fields[3].empty()) {
      return corrupt(i);
    }
    if (fields[1] == answered.run_) {
      answered.hops_[hop] = fields[3];
    } else {
      absl::StrAppend(&answered.others_, lines[i], "\n");
    }
  }
  return answered;
}

absl::Status AnsweredHops::Check(int hop, const std::string& digest) const {
  const auto it = hops_.find(hop);
  if (it == hops_.end() || it->second == digest) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("refusing a second list to blind for alignment hop ", hop,
                   ": this party already blinded another one for that hop in this run"));
}

absl::Status AnsweredHops::Record(int hop, const std::string& digest) {
  RETURN_IF_ERROR(Check(hop, digest));
  if (hops_.count(hop) > 0) return absl::OkStatus();
  std::map<int, std::string> hops = hops_;
  hops[hop] = digest;
  std::string text = absl::StrCat(kMagic, " ", kFormatVersion, "\n", others_);
  for (const auto& [answered, list] : hops) text += HopLine(run_, answered, list);
  RETURN_IF_ERROR(MakeDirectories(std::filesystem::path(path_).parent_path().string()));
  RETURN_IF_ERROR(WriteFileAtomically(path_, text));
  hops_ = std::move(hops);
  return absl::OkStatus();
}

}  // namespace vfsynth
