#ifndef VFSYNTH_COMMON_BASE_FILE_IO_H_
#define VFSYNTH_COMMON_BASE_FILE_IO_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth {

// Reads a whole file; NOT_FOUND / PERMISSION_DENIED style errors name the path.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// A private file (a key, the party's secrets) that group or others may read: the
// warning to log, naming the file and the fix; nullopt when it is private (or absent).
std::optional<std::string> ReadableByOthersWarning(const std::string& path);

// Writes atomically and durably: temp file in the same directory, fsync, rename,
// fsync of the directory. Readers see the old or the new contents, never a mix.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);
// The same, readable and writable by the owner only (mode 0600): for secrets.
absl::Status WritePrivateFile(const std::string& path, absl::string_view contents);

// INTERNAL "<what> <path>: <strerror(errno)>", for a failed system call on `path`.
absl::Status ErrnoError(absl::string_view what, absl::string_view path);

// fsyncs the directory holding `path`, which makes a file created or renamed there
// durable under its name.
absl::Status SyncDirectoryOf(const std::string& path);

// Creates a directory and its parents (no error if it exists).
absl::Status MakeDirectories(const std::string& path);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_FILE_IO_H_
