#include "common/privacy/ledger_file.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/fnv.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"

namespace vfsynth::privacy {
namespace {

constexpr char kChecksumKey[] = "fnv64=";
// The SHA-256 of the line before: the chain.
constexpr char kPrevKey[] = "prev";

absl::Status BadField(const std::string& key, const std::string& text, int line_no) {
  return absl::DataLossError(absl::StrCat("ledger line ", line_no, ": bad ", key, " '", text, "'"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<LedgerFile>> LedgerFile::Open(const std::string& path, bool create,
                                                             std::string what) {
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
  if (fd < 0 && errno == ENOENT && !create)
    return absl::NotFoundError(absl::StrCat(what, " ", path, " does not exist"));
  if (fd < 0) return ErrnoError(absl::StrCat("cannot open ", what), path);
  return OpenFd(path, std::move(what), fd, /*writable=*/true, /*must_exist=*/!create);
}

absl::StatusOr<std::unique_ptr<LedgerFile>> LedgerFile::OpenForReading(const std::string& path,
                                                                       std::string what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return absl::NotFoundError(absl::StrCat(what, " ", path, " does not exist"));
  if (fd < 0) return ErrnoError(absl::StrCat("cannot open ", what), path);
  return OpenFd(path, std::move(what), fd, /*writable=*/false, /*must_exist=*/true);
}

absl::StatusOr<std::unique_ptr<LedgerFile>> LedgerFile::OpenFd(const std::string& path,
                                                               std::string what, int fd,
                                                               bool writable, bool must_exist) {
  std::unique_ptr<LedgerFile> file(new LedgerFile(path, std::move(what), fd, writable));
  struct stat info;
  if (::fstat(fd, &info) != 0) return ErrnoError(absl::StrCat("cannot stat ", file->what_), path);
  if (!S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(file->name(),
                     " is not a regular file: a ledger must be a file on a filesystem that keeps "
                     "what is appended to it"));
  }
  // One writer per ledger: a second daemon on the same file would double-spend.
  if (writable && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(file->name(), " is in use by another process"));
  }
  ASSIGN_OR_RETURN(std::string contents, ReadFile(path));
  const size_t last_newline = contents.rfind('\n');
  const size_t complete = last_newline == std::string::npos ? 0 : last_newline + 1;
  if (complete < contents.size() && writable) {
    spdlog::warn("{}: dropping a torn last line ({} bytes) left by a crash", file->name(),
                 contents.size() - complete);
    if (::ftruncate(fd, static_cast<off_t>(complete)) != 0 || ::fsync(fd) != 0) {
      return ErrnoError(absl::StrCat("cannot truncate torn ", file->what_), path);
    }
  }
  file->torn_bytes_ = static_cast<int64_t>(contents.size() - complete);
  contents.resize(complete);
  file->size_ = static_cast<int64_t>(contents.size());
  for (absl::string_view line : absl::StrSplit(contents, '\n', absl::SkipEmpty()))
    file->lines_.emplace_back(line);
  if (!file->lines_.empty()) file->last_line_ = file->lines_.back();
  if (file->lines_.empty() && must_exist) {
    return absl::NotFoundError(absl::StrCat(file->name(), " is empty (it has no header)"));
  }
  return file;
}

absl::Status LedgerFile::WriteHeader(absl::string_view magic, const LedgerFieldList& fields) {
  const std::string line = FormatLedgerLine(magic, fields);
  RETURN_IF_ERROR(AppendLine(line));
  last_line_ = line.substr(0, line.size() - 1);
  return SyncDirectoryOf(path_);
}

LedgerBody LedgerFile::Body() const {
  LedgerBody body;
  for (size_t i = 1; i < lines_.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    absl::StatusOr<std::pair<std::string, LedgerFields>> parsed =
        ParseLedgerLine(lines_[i], line_no);
    if (!parsed.ok()) {
      body.status = absl::DataLossError(absl::StrCat(name(), ": ", parsed.status().message()));
      return body;
    }
    LedgerFields& fields = parsed->second;
    auto prev = fields.find(kPrevKey);
    if (prev == fields.end() || prev->second != Sha256Hex(lines_[i - 1])) {
      body.status = absl::DataLossError(absl::StrCat(
          name(), " line ", line_no, " does not follow line ", line_no - 1,
          " (its prev digest is not that line's): a line was removed, inserted, duplicated, "
          "reordered or edited there, and the ledger no longer shows what the run spent"));
      return body;
    }
    fields.erase(prev);
    body.records.push_back({line_no, std::move(parsed->first), std::move(fields)});
  }
  return body;
}

absl::StatusOr<LedgerFields> LedgerFile::CheckHeader(absl::string_view magic,
                                                     absl::string_view version,
                                                     const LedgerFieldList& expected) const {
  if (lines_.empty()) return absl::DataLossError(absl::StrCat(path_, " has no ledger header"));
  return CheckHeaderLine(lines_[0], magic, version, expected, what_, path_);
}

absl::StatusOr<LedgerFields> CheckHeaderLine(absl::string_view line, absl::string_view magic,
                                             absl::string_view version,
                                             const LedgerFieldList& expected,
                                             absl::string_view what, absl::string_view path) {
  ASSIGN_OR_RETURN(auto header, ParseLedgerLine(line, 1));
  if (header.first != magic)
    return absl::DataLossError(absl::StrCat(path, " is not a vfsynth ", what));
  const std::string found = HeaderField(header.second, "version");
  if (found != version) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " ", path, " has format version ", found, "; this build reads version ", version,
        " only: finish its run with the build that started it, or start a new run with a new "
        "ledger"));
  }
  for (const auto& [key, value] : expected) {
    if (HeaderField(header.second, key) != value) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " ", path, " belongs to another run or configuration: ", key, " is '",
                       HeaderField(header.second, key), "', this run has '", value, "'"));
    }
  }
  return std::move(header.second);
}

LedgerFile::~LedgerFile() { ::close(fd_); }

absl::Status LedgerFile::Append(absl::string_view tag, const LedgerFieldList& fields) {
  return AppendAll(tag, {fields});
}

absl::Status LedgerFile::AppendAll(absl::string_view tag,
                                   const std::vector<LedgerFieldList>& lines) {
  if (lines.empty()) return absl::OkStatus();
  std::string text;
  std::string last = last_line_;
  for (const LedgerFieldList& fields : lines) {
    LedgerFieldList chained = fields;
    chained.emplace_back(kPrevKey, Sha256Hex(last));
    const std::string line = FormatLedgerLine(tag, chained);
    last = line.substr(0, line.size() - 1);
    text += line;
  }
  RETURN_IF_ERROR(AppendLine(text));
  last_line_ = std::move(last);
  return absl::OkStatus();
}

absl::Status LedgerFile::AppendLine(const std::string& line) {
  if (!writable_) {
    return absl::FailedPreconditionError(absl::StrCat(name(), " is open for reading only"));
  }
  if (broken_) {
    return absl::FailedPreconditionError(
        absl::StrCat(what_, " ", path_, " had a failed write; reopen it before writing again"));
  }
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  if (written == line.size() && ::fsync(fd_) == 0) {
    size_ += static_cast<int64_t>(line.size());
    return absl::OkStatus();
  }
  absl::Status error = ErrnoError(absl::StrCat("cannot append to ", what_), path_);
  // Undo a partial line so the next append does not glue onto it; if even that fails,
  // refuse further appends (the replay on reopen sorts it out).
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0 || ::fsync(fd_) != 0) broken_ = true;
  return error;
}

std::string FormatLedgerLine(absl::string_view tag, const LedgerFieldList& fields) {
  std::string body(tag);
  for (const auto& [key, value] : fields) absl::StrAppend(&body, "\t", key, "=", value);
  return absl::StrCat(body, "\t", kChecksumKey, absl::Hex(Fnv1a64(body), absl::kZeroPad16), "\n");
}

absl::StatusOr<std::pair<std::string, LedgerFields>> ParseLedgerLine(absl::string_view line,
                                                                     int line_no) {
  const size_t last_tab = line.rfind('\t');
  if (last_tab == absl::string_view::npos ||
      !absl::StartsWith(line.substr(last_tab + 1), kChecksumKey)) {
    return absl::DataLossError(absl::StrCat("ledger line ", line_no, " has no checksum"));
  }
  const absl::string_view body = line.substr(0, last_tab);
  uint64_t checksum = 0;
  if (!absl::SimpleHexAtoi(line.substr(last_tab + 1 + std::strlen(kChecksumKey)), &checksum) ||
      checksum != Fnv1a64(body)) {
    return absl::DataLossError(absl::StrCat("ledger line ", line_no, " fails its checksum"));
  }
  std::vector<absl::string_view> parts = absl::StrSplit(body, '\t');
  LedgerFields fields;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(parts[i], absl::MaxSplits('=', 1));
    fields[kv.first] = kv.second;
  }
  return std::make_pair(std::string(parts[0]), std::move(fields));
}

absl::StatusOr<std::string> LedgerField(const LedgerFields& fields, const std::string& key,
                                        int line_no) {
  auto it = fields.find(key);
  if (it == fields.end())
    return absl::DataLossError(absl::StrCat("ledger line ", line_no, " lacks ", key));
  return it->second;
}

absl::StatusOr<double> LedgerDoubleField(const LedgerFields& fields, const std::string& key,
                                         int line_no) {
  ASSIGN_OR_RETURN(const std::string text, LedgerField(fields, key, line_no));
  double value = 0.0;
  if (!absl::SimpleAtod(text, &value)) return BadField(key, text, line_no);
  return value;
}

absl::StatusOr<std::vector<double>> LedgerDoubleList(const std::string& text,
                                                     const std::string& key, int line_no) {
  std::vector<double> values;
  if (text.empty()) return values;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    double value = 0.0;
    if (!absl::SimpleAtod(item, &value)) return BadField(key, text, line_no);
    values.push_back(value);
  }
  return values;
}

absl::StatusOr<int64_t> LedgerIntField(const LedgerFields& fields, const std::string& key,
                                       int line_no) {
  ASSIGN_OR_RETURN(const std::string text, LedgerField(fields, key, line_no));
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) return BadField(key, text, line_no);
  return value;
}

std::string ExactDouble(double value) { return absl::StrFormat("%.17g", value); }

bool IsLedgerFieldValue(const std::string& value) {
  return !value.empty() && value.find_first_of("\t\n\r=") == std::string::npos;
}

std::string HeaderField(const LedgerFields& header, const std::string& key) {
  auto it = header.find(key);
  return it == header.end() ? std::string("<missing>") : it->second;
}

absl::StatusOr<std::string> HeaderLedgerId(const LedgerFields& header, const std::string& ledger) {
  auto it = header.find("ledger_id");
  if (it == header.end() || !IsLedgerFieldValue(it->second))
    return absl::DataLossError(absl::StrCat(ledger, " has no ledger id in its header"));
  return it->second;
}

}  // namespace vfsynth::privacy
