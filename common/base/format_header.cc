#include "common/base/format_header.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {
namespace {

std::string Prefix(const FileFormat& format) { return absl::StrCat("VFSYNTH-", format.kind, " "); }

}  // namespace

std::string FormatHeader(const FileFormat& format) {
  return absl::StrCat(Prefix(format), format.version, "\n");
}

absl::StatusOr<absl::string_view> BodyAfterHeader(const FileFormat& format, const std::string& path,
                                                  absl::string_view contents) {
  const std::string prefix = Prefix(format);
  const size_t end = contents.find('\n');
  uint32_t version = 0;
  if (end == absl::string_view::npos || !absl::StartsWith(contents, prefix) ||
      !absl::SimpleAtoi(contents.substr(prefix.size(), end - prefix.size()), &version)) {
    return absl::DataLossError(absl::StrCat(path, " is not a vfsynth ", format.description));
  }
  if (version != format.version) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is a ", format.description, " of format version ", version,
                     "; this build reads version ", format.version, " only"));
  }
  return contents.substr(end + 1);
}

}  // namespace vfsynth
