#ifndef VFSYNTH_COMMON_DATA_CSV_H_
#define VFSYNTH_COMMON_DATA_CSV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth {

// A CSV table as strings: header plus rows. `line_numbers[i]` is the 1-based line
// where row i starts in the source, so later stages can report errors precisely.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> line_numbers;
  int64_t skipped_rows = 0;  // malformed rows dropped under skip_bad_rows

  // Index of a header column, or -1.
  int ColumnIndex(absl::string_view name) const;
};

struct CsvReadOptions {
  char delimiter = ',';
  // Drop (and count) rows with the wrong number of fields or broken quoting instead
  // of failing. A malformed header is always an error.
  bool skip_bad_rows = false;
  // Strip spaces and tabs around unquoted fields (Adult's raw files use ", ").
  bool trim_unquoted = true;
};

// RFC 4180: fields may be quoted with '"', quotes inside are doubled, quoted fields
// may span lines. CRLF and LF are both accepted. `source` names the input in errors.
absl::StatusOr<CsvTable> ParseCsv(absl::string_view text, const std::string& source,
                                  const CsvReadOptions& options = {});
absl::StatusOr<CsvTable> ReadCsv(const std::string& path, const CsvReadOptions& options = {});

// Serialises with quoting where a field needs it (delimiter, quote, CR/LF, or
// surrounding spaces). Every row must have header.size() fields.
absl::StatusOr<std::string> FormatCsv(const CsvTable& table, char delimiter = ',');
absl::Status WriteCsv(const std::string& path, const CsvTable& table, char delimiter = ',');

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_CSV_H_
