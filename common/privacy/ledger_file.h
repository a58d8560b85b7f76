#ifndef VFSYNTH_COMMON_PRIVACY_LEDGER_FILE_H_
#define VFSYNTH_COMMON_PRIVACY_LEDGER_FILE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth::privacy {

// A line's fields as read (by key) and as written (in order).
using LedgerFields = std::map<std::string, std::string>;
using LedgerFieldList = std::vector<std::pair<std::string, std::string>>;

// One line after a ledger's header, parsed.
struct LedgerRecord {
  int line_no = 0;  // the header is line 1
  std::string tag;
  LedgerFields fields;
};

// The lines after a ledger's header as far as they verify, and where they stop.
struct LedgerBody {
  std::vector<LedgerRecord> records;
  // OK, or DATA_LOSS naming the file and the first line that does not verify.
  absl::Status status;
};

// The file under a party's ledgers (the privacy ledger, the participation ledger): an
// append-only text file of checksummed lines "<tag>\tkey=value...\tfnv64=<hex>\n", held
// by one process at a time, every append fsynced before the caller releases anything.
// Every line after the header carries prev=<SHA-256 of the line before it>: a line
// removed, inserted, duplicated, reordered or edited breaks the chain at the next line.
// A crash mid-append leaves a last line without '\n': its record never completed, so
// nothing was released for it, and Open drops it.
class LedgerFile {
 public:
  // Opens `path` (created 0600 with `create`) and locks it; `what` ("privacy ledger")
  // names it in messages. NOT_FOUND for a missing or empty file without `create`;
  // FAILED_PRECONDITION if another process holds it or it is not a regular file (a
  // device such as /dev/full would never hold a charge, nor end when read).
  static absl::StatusOr<std::unique_ptr<LedgerFile>> Open(const std::string& path, bool create,
                                                          std::string what);
  // Opens `path` to read it only: no lock (its daemon may be running), a torn last line
  // kept out of lines() but left in the file (torn_bytes()). Append refuses.
  static absl::StatusOr<std::unique_ptr<LedgerFile>> OpenForReading(const std::string& path,
                                                                    std::string what);
  ~LedgerFile();  // also releases the lock
  LedgerFile(const LedgerFile&) = delete;
  LedgerFile& operator=(const LedgerFile&) = delete;

  // The complete lines found at Open, without their '\n' (none for a new file).
  const std::vector<std::string>& lines() const { return lines_; }
  // Bytes of a torn last line OpenForReading left out (Open truncates them).
  int64_t torn_bytes() const { return torn_bytes_; }
  // The first line of a new file: `magic` with `fields`, appended, and the directory synced.
  absl::Status WriteHeader(absl::string_view magic, const LedgerFieldList& fields);
  // The first line found at Open, checked: DATA_LOSS unless it is a `magic` line;
  // FAILED_PRECONDITION, with one message each, for another format `version` or a field of
  // `expected` (the run and its configuration) with another value. Its fields.
  absl::StatusOr<LedgerFields> CheckHeader(absl::string_view magic, absl::string_view version,
                                           const LedgerFieldList& expected) const;
  // The lines after the header, each checked for its checksum and its link to the line
  // before it.
  LedgerBody Body() const;
  // Appends the line `tag` with `fields`, chained to the last line, and fsyncs. After a
  // failed write the partial line is undone; if even that fails the file is broken and
  // refuses every later append. Not thread-safe: the ledger on top serialises its appends.
  absl::Status Append(absl::string_view tag, const LedgerFieldList& fields);
  // Appends one `tag` line per entry of `lines`, chained in order, with one write and one
  // fsync: all of them or (after a failed write, undone as above) none.
  absl::Status AppendAll(absl::string_view tag, const std::vector<LedgerFieldList>& lines);
  const std::string& path() const { return path_; }
  // "privacy ledger <path>", for messages.
  std::string name() const { return what_ + " " + path_; }

 private:
  LedgerFile(std::string path, std::string what, int fd, bool writable)
      : path_(std::move(path)), what_(std::move(what)), fd_(fd), writable_(writable) {}
  static absl::StatusOr<std::unique_ptr<LedgerFile>> OpenFd(const std::string& path,
                                                            std::string what, int fd,
                                                            bool writable, bool must_exist);
  absl::Status AppendLine(const std::string& line);

  const std::string path_;
  const std::string what_;
  const int fd_;
  const bool writable_;
  std::vector<std::string> lines_;
  std::string last_line_;  // the last complete line, which the next one is chained to
  int64_t size_ = 0;
  int64_t torn_bytes_ = 0;
  bool broken_ = false;
};

// "<tag>\tk=v\t...\tfnv64=<hex>\n".
std::string FormatLedgerLine(absl::string_view tag, const LedgerFieldList& fields);
// One complete line (without '\n'): its tag and fields, the checksum checked (DATA_LOSS).
absl::StatusOr<std::pair<std::string, LedgerFields>> ParseLedgerLine(absl::string_view line,
                                                                     int line_no);

// A field of line `line_no`, parsed; DATA_LOSS naming the line when missing or malformed.
absl::StatusOr<std::string> LedgerField(const LedgerFields& fields, const std::string& key,
                                        int line_no);
absl::StatusOr<int64_t> LedgerIntField(const LedgerFields& fields, const std::string& key,
                                       int line_no);
absl::StatusOr<double> LedgerDoubleField(const LedgerFields& fields, const std::string& key,
                                         int line_no);
// A comma-separated list of doubles; "" is the empty list.
absl::StatusOr<std::vector<double>> LedgerDoubleList(const std::string& text,
                                                     const std::string& key, int line_no);

// Shortest text that parses back to the same double.
std::string ExactDouble(double value);
// A value the line format can hold: non-empty, no tabs, newlines or '='.
bool IsLedgerFieldValue(const std::string& value);

// A header line (without '\n') of the file `what` at `path`, checked as
// LedgerFile::CheckHeader checks the first line.
absl::StatusOr<LedgerFields> CheckHeaderLine(absl::string_view line, absl::string_view magic,
                                             absl::string_view version,
                                             const LedgerFieldList& expected,
                                             absl::string_view what, absl::string_view path);

// The header field `key` of a parsed header, "<missing>" if absent.
std::string HeaderField(const LedgerFields& header, const std::string& key);
// The ledger id of a parsed header; DATA_LOSS naming `ledger` ("privacy ledger <path>")
// if it has none.
absl::StatusOr<std::string> HeaderLedgerId(const LedgerFields& header, const std::string& ledger);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_LEDGER_FILE_H_
