#include "common/base/writable_directory.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace vfsynth {

absl::Status CheckWritableDirectoryFor(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(path, error)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, " is a directory; name a file in it"));
  }
  fs::path directory = fs::path(path).parent_path();
  if (directory.empty()) directory = ".";
  if (!fs::is_directory(directory, error)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, ": the directory ", directory.string(),
                     " does not exist (create it before the run)"));
  }
  // A file actually created there answers for permissions, read-only mounts and quotas.
  std::string probe = (directory / ".vfsynth-write-check-XXXXXX").string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": cannot write in ",
                                                      directory.string(), " (",
                                                      std::strerror(errno), ")"));
  }
  close(fd);
  unlink(probe.c_str());
  return absl::OkStatus();
}

}  // namespace vfsynth
