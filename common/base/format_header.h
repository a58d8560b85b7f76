#ifndef VFSYNTH_COMMON_BASE_FORMAT_HEADER_H_
#define VFSYNTH_COMMON_BASE_FORMAT_HEADER_H_

// A state file vfsynth writes in its own byte format (reply journal, kept releases,
// generator artefact) starts with one line naming the kind of file and its format
// version, "VFSYNTH-<KIND> <version>\n". A reader refuses another kind or another
// version with one message; there is no reading of older formats.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth {

struct FileFormat {
  absl::string_view kind;         // e.g. "JOURNAL"; upper case, no spaces
  absl::string_view description;  // for messages, e.g. "reply journal"
  uint32_t version;
};

// The header line, '\n' included.
std::string FormatHeader(const FileFormat& format);

// The bytes after `contents`' header. DATA_LOSS if `contents` does not start with a
// header of `format`'s kind, FAILED_PRECONDITION naming both versions if its version
// differs; each message names `path`.
absl::StatusOr<absl::string_view> BodyAfterHeader(const FileFormat& format, const std::string& path,
                                                  absl::string_view contents);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_FORMAT_HEADER_H_
