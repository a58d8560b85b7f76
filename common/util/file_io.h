#ifndef VFSYNTH_COMMON_UTIL_FILE_IO_H_
#define VFSYNTH_COMMON_UTIL_FILE_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth {

// Reads a whole file; NOT_FOUND / PERMISSION_DENIED style errors name the path.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes atomically and durably: temp file in the same directory, fsync, rename,
// fsync of the directory. Readers see the old or the new contents, never a mix.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Creates a directory and its parents (no error if it exists).
absl::Status MakeDirectories(const std::string& path);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_UTIL_FILE_IO_H_
