#include "client/core/reply_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/fnv.h"
#include "common/base/format_header.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

// The file: its format header, then records framed as u32 length, u64 Fnv1a64Words
// of the bytes, the bytes (little-endian).
constexpr FileFormat kFormat{"JOURNAL", "reply journal", 1};
constexpr size_t kFrame = 12;

void AppendLe(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t ReadLe(const std::string& data, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(data[offset + i])) << (8 * i);
  }
  return value;
}

std::string Frame(const v1::JournalEntry& entry) {
  const std::string bytes = entry.SerializeAsString();
  std::string record;
  AppendLe(bytes.size(), 4, &record);
  AppendLe(Fnv1a64Words(bytes), 8, &record);
  record += bytes;
  return record;
}

absl::Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("cannot append to", path);
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplyJournal>> ReplyJournal::Open(const std::string& path,
                                                                 size_t compact_bytes) {
  std::string contents;
  if (auto existing = ReadFile(path); existing.ok()) {
    contents = std::move(*existing);
  } else if (existing.status().code() != absl::StatusCode::kNotFound) {
    return existing.status();
  }
  const std::string header = FormatHeader(kFormat);
  if (contents.size() < header.size() && absl::StartsWith(header, contents)) {
    // A new journal, or part of a header left by a crash at creation (nothing was sent).
    RETURN_IF_ERROR(WriteFileAtomically(path, header));
    contents = header;
  }
  ASSIGN_OR_RETURN(const absl::string_view records, BodyAfterHeader(kFormat, path, contents));
  std::map<Key, v1::JournalEntry> entries;
  size_t offset = contents.size() - records.size();
  while (offset < contents.size()) {
    const bool whole_frame = contents.size() - offset >= kFrame;
    const size_t length = whole_frame ? ReadLe(contents, offset, 4) : 0;
    if (!whole_frame || contents.size() - offset - kFrame < length) break;  // torn tail
    const std::string bytes = contents.substr(offset + kFrame, length);
    v1::JournalEntry entry;
    if (Fnv1a64Words(bytes) != ReadLe(contents, offset + 4, 8) || !entry.ParseFromString(bytes)) {
      if (offset + kFrame + length == contents.size()) break;  // torn last record
      return absl::DataLossError(
          absl::StrCat("reply journal ", path, " is damaged at byte ", offset));
    }
    entries[{entry.payload(), entry.round(), entry.step()}] = std::move(entry);
    offset += kFrame + length;
  }
  if (offset < contents.size()) {
    spdlog::warn(
        "reply journal {}: dropping a torn last record ({} bytes; its reply was never sent)", path,
        contents.size() - offset);
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("cannot open", path);
  if (::ftruncate(fd, static_cast<off_t>(offset)) != 0 || ::lseek(fd, 0, SEEK_END) < 0) {
    ::close(fd);
    return ErrnoError("cannot truncate", path);
  }
  std::unique_ptr<ReplyJournal> journal(new ReplyJournal(path, fd, compact_bytes));
  journal->entries_ = std::move(entries);
  return journal;
}

absl::Status ReplyJournal::Remove(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError("cannot remove", path);
  return absl::OkStatus();
}

ReplyJournal::~ReplyJournal() {
  absl::MutexLock lock(&mu_);
  ::close(fd_);
}

const v1::JournalEntry* ReplyJournal::Find(int payload, int64_t round, int64_t step) const {
  auto it = entries_.find({payload, round, step});
  return it == entries_.end() ? nullptr : &it->second;
}

absl::Status ReplyJournal::Append(const v1::JournalEntry& entry) {
  return Write(entry, /*sync=*/true);
}

absl::Status ReplyJournal::AppendUnsynced(const v1::JournalEntry& entry) {
  return Write(entry, /*sync=*/false);
}

absl::Status ReplyJournal::Write(const v1::JournalEntry& entry, bool sync) {
  const std::string record = Frame(entry);
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(WriteAll(fd_, record, path_));
    unsynced_ = true;
  }
  if (sync) RETURN_IF_ERROR(Sync());
  entries_[{entry.payload(), entry.round(), entry.step()}] = entry;
  return absl::OkStatus();
}

absl::Status ReplyJournal::Sync() {
  absl::MutexLock lock(&mu_);
  if (!unsynced_) return absl::OkStatus();
  // fdatasync also writes the grown file size, which finding the new records needs.
  if (::fdatasync(fd_) != 0) return ErrnoError("cannot flush", path_);
  unsynced_ = false;
  return absl::OkStatus();
}

absl::Status ReplyJournal::DropBefore(int64_t round) {
  bool any = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.round() < round) {
      dropped_bytes_ += kFrame + it->second.ByteSizeLong();
      it = entries_.erase(it);
      any = true;
    } else {
      ++it;
    }
  }
  if (!any || dropped_bytes_ < compact_bytes_) return absl::OkStatus();
  std::string contents = FormatHeader(kFormat);
  for (const auto& [key, entry] : entries_) contents += Frame(entry);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(WriteFileAtomically(path_, contents));  // durable: every kept entry is synced
  // The old descriptor points at the replaced file; append to the new one.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot reopen", path_);
  ::close(fd_);
  fd_ = fd;
  unsynced_ = false;
  dropped_bytes_ = 0;
  return absl::OkStatus();
}

}  // namespace vfsynth
