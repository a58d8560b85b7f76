#include "common/base/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vfsynth {
namespace {

absl::Status ErrnoStatus(const std::string& what, const std::string& path) {
  const int err = errno;
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

}  // namespace

absl::Status ErrnoError(absl::string_view what, absl::string_view path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status SyncDirectoryOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open directory", dir);
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return ErrnoError("cannot flush directory", dir);
  return absl::OkStatus();
}

std::optional<std::string> ReadableByOthersWarning(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0 || (info.st_mode & (S_IRWXG | S_IRWXO)) == 0)
    return std::nullopt;
  return absl::StrFormat(
      "%s is accessible to group or others (mode %04o); it is private: chmod 600 %s", path,
      info.st_mode & 0777, path);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus("cannot open", path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return ErrnoStatus("cannot read", path);
  return buffer.str();
}

namespace {

// The temp files of `path` left by writers killed mid-write (a temp name carries its
// writer's pid, and a pid no process holds is a dead writer's).
void RemoveDeadWritersTempFiles(const std::string& path) {
  const std::filesystem::path target(path);
  const std::string prefix = absl::StrCat(target.filename().string(), ".tmp.");
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(
           target.has_parent_path() ? target.parent_path() : ".", error)) {
    const std::string name = entry.path().filename().string();
    pid_t pid = 0;
    if (!absl::StartsWith(name, prefix) || !absl::SimpleAtoi(name.substr(prefix.size()), &pid) ||
        pid <= 0 || pid == ::getpid()) {
      continue;
    }
    if (::kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(entry.path(), error);
  }
}

absl::Status WriteAtomically(const std::string& path, absl::string_view contents, mode_t mode) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus("cannot create", tmp);
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status status = ErrnoStatus("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return status;
    }
    written += static_cast<size_t>(n);
  }
  // The descriptor is closed whatever fsync says; the first failure is the one reported.
  absl::Status flushed = ::fsync(fd) == 0 ? absl::OkStatus() : ErrnoStatus("cannot flush", tmp);
  if (::close(fd) != 0 && flushed.ok()) flushed = ErrnoStatus("cannot close", tmp);
  if (!flushed.ok()) {
    ::unlink(tmp.c_str());
    return flushed;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status status = ErrnoStatus("cannot rename onto", path);
    ::unlink(tmp.c_str());
    return status;
  }
  RemoveDeadWritersTempFiles(path);
  // The rename itself is durable only once the directory entry is on disk.
  return SyncDirectoryOf(path);
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  return WriteAtomically(path, contents, 0644);
}

absl::Status WritePrivateFile(const std::string& path, absl::string_view contents) {
  return WriteAtomically(path, contents, 0600);
}

absl::Status MakeDirectories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create directory ", path, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace vfsynth
