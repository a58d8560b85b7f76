#include "common/checkpoint/checkpoint_slots.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

// Slot framing: magic, u32 header size, u64 payload size (both little-endian), the
// header, the hex SHA-256 of the header, the payload. The sizes bound the record, so
// bytes left behind by a longer earlier record do not matter.
constexpr absl::string_view kMagic("VFSYNTH-SLOT\n", 13);
constexpr size_t kSizes = 12;
constexpr size_t kHeaderDigest = 64;

void AppendLe(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t ReadLe(absl::string_view data, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(data[i])) << (8 * i);
  return value;
}

absl::StatusOr<Checkpoint> DecodeSlot(absl::string_view file, const std::string& path) {
  if (file.size() < kMagic.size() + kSizes || file.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError(absl::StrCat(path, " is not a vfsynth checkpoint slot"));
  }
  file.remove_prefix(kMagic.size());
  const uint64_t header_size = ReadLe(file, 4);
  const uint64_t payload_size = ReadLe(file.substr(4), 8);
  file.remove_prefix(kSizes);
  if (header_size + kHeaderDigest > file.size() ||
      payload_size > file.size() - header_size - kHeaderDigest) {
    return absl::DataLossError(absl::StrCat(path, ": truncated checkpoint slot"));
  }
  const absl::string_view header_bytes = file.substr(0, header_size);
  Checkpoint checkpoint;
  if (Sha256Hex(header_bytes) != file.substr(header_size, kHeaderDigest) ||
      !checkpoint.header.ParseFromArray(header_bytes.data(),
                                        static_cast<int>(header_bytes.size()))) {
    return absl::DataLossError(absl::StrCat(path, ": damaged checkpoint slot header"));
  }
  if (checkpoint.header.format_version() != kCheckpointFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": checkpoint format version ", checkpoint.header.format_version(),
                     " (this build reads version ", kCheckpointFormatVersion, ")"));
  }
  const absl::string_view payload = file.substr(header_size + kHeaderDigest, payload_size);
  if (Sha256Hex(payload) != checkpoint.header.payload_sha256()) {
    return absl::DataLossError(
        absl::StrCat(path, ": checkpoint slot payload is damaged (checksum mismatch)"));
  }
  checkpoint.payload = std::string(payload);
  return checkpoint;
}

bool Newer(const v1::CheckpointHeader& a, const v1::CheckpointHeader& b) {
  return a.step() != b.step() ? a.step() > b.step() : a.round() > b.round();
}

// Writes all of `parts` at offset 0 and flushes the data (and the size, if it grew).
absl::Status WriteInPlace(int fd, std::vector<absl::string_view> parts, const std::string& path) {
  off_t offset = 0;
  size_t first = 0;
  while (first < parts.size()) {
    std::vector<iovec> iov;
    for (size_t i = first; i < parts.size(); ++i) {
      iov.push_back({const_cast<char*>(parts[i].data()), parts[i].size()});
    }
    const ssize_t n = ::pwritev(fd, iov.data(), static_cast<int>(iov.size()), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("cannot write", path);
    offset += n;
    for (size_t left = static_cast<size_t>(n); left > 0 && first < parts.size();) {
      const size_t used = std::min(left, parts[first].size());
      parts[first].remove_prefix(used);
      left -= used;
      if (parts[first].empty()) ++first;
    }
    while (first < parts.size() && parts[first].empty()) ++first;
  }
  if (::fdatasync(fd) != 0) return ErrnoError("cannot flush", path);
  return absl::OkStatus();
}

}  // namespace

std::string CheckpointSlots::SlotPath(int slot) const { return absl::StrCat(path_, ".", slot); }

bool CheckpointSlots::Exists() const {
  return std::filesystem::exists(SlotPath(0)) || std::filesystem::exists(SlotPath(1));
}

absl::StatusOr<Checkpoint> CheckpointSlots::Read() {
  std::optional<Checkpoint> newest;
  int newest_slot = -1;
  std::string problems;
  bool any_file = false;
  for (int slot = 0; slot < 2; ++slot) {
    const std::string path = SlotPath(slot);
    absl::StatusOr<std::string> file = ReadFile(path);
    if (file.status().code() == absl::StatusCode::kNotFound) continue;
    if (!file.ok()) return file.status();
    any_file = true;
    absl::StatusOr<Checkpoint> checkpoint = DecodeSlot(*file, path);
    if (checkpoint.status().code() == absl::StatusCode::kDataLoss) {
      absl::StrAppend(&problems, problems.empty() ? "" : "; ", checkpoint.status().message());
      continue;
    }
    if (!checkpoint.ok()) return checkpoint.status();
    if (!newest.has_value() || Newer(checkpoint->header, newest->header)) {
      newest = std::move(*checkpoint);
      newest_slot = slot;
    }
  }
  next_slot_ = newest_slot == 0 ? 1 : 0;
  damaged_ = newest.has_value() ? problems : "";
  if (!any_file) return absl::NotFoundError(absl::StrCat("no checkpoint at ", path_, ".{0,1}"));
  if (!newest.has_value())
    return absl::DataLossError(absl::StrCat("no valid checkpoint slot: ", problems));
  return std::move(*newest);
}

absl::Status CheckpointSlots::Write(v1::CheckpointHeader header, absl::string_view payload) {
  if (next_slot_ < 0) {
    absl::StatusOr<Checkpoint> current = Read();  // sets next_slot_ unless it fails outright
    if (!current.ok() && next_slot_ < 0) return current.status();
  }
  header.set_format_version(kCheckpointFormatVersion);
  header.set_payload_sha256(Sha256Hex(payload));
  const std::string header_bytes = header.SerializeAsString();
  std::string prefix(kMagic);
  AppendLe(header_bytes.size(), 4, &prefix);
  AppendLe(payload.size(), 8, &prefix);
  prefix += header_bytes;
  prefix += Sha256Hex(header_bytes);

  const std::string path = SlotPath(next_slot_);
  bool created = true;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    created = false;
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  }
  if (fd < 0) return ErrnoError("cannot open", path);
  const absl::Status written = WriteInPlace(fd, {prefix, payload}, path);
  if (::close(fd) != 0 && written.ok()) return ErrnoError("cannot close", path);
  RETURN_IF_ERROR(written);
  // A new file's directory entry is durable only once the directory is.
  if (created) RETURN_IF_ERROR(SyncDirectoryOf(path));
  next_slot_ = 1 - next_slot_;
  return absl::OkStatus();
}

}  // namespace vfsynth
