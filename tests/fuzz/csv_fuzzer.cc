// libFuzzer target: the CSV reader on arbitrary text (party data files, synthetic
// tables). The first byte picks the options. A parse either fails with a status or
// yields a rectangular table with one line number per row; formatting that table
// and parsing it again must give the same table back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/data/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  vfsynth::CsvReadOptions options;
  options.delimiter = (data[0] & 1) ? ';' : ',';
  options.skip_bad_rows = (data[0] & 2) != 0;
  options.trim_unquoted = (data[0] & 4) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto table = vfsynth::ParseCsv(text, "fuzz", options);
  if (!table.ok()) return 0;
  if (table->rows.size() != table->line_numbers.size()) std::abort();
  for (size_t i = 0; i < table->rows.size(); ++i) {
    if (table->rows[i].size() != table->header.size()) std::abort();
    if (table->line_numbers[i] < 1 ||
        (i > 0 && table->line_numbers[i] <= table->line_numbers[i - 1])) {
      std::abort();
    }
  }
  auto formatted = vfsynth::FormatCsv(*table, options.delimiter);
  if (!formatted.ok()) std::abort();  // every parsed table must be writable
  vfsynth::CsvReadOptions strict = options;
  strict.skip_bad_rows = false;
  auto again = vfsynth::ParseCsv(*formatted, "fuzz-roundtrip", strict);
  if (!again.ok()) std::abort();
  if (again->header != table->header || again->rows != table->rows) std::abort();
  return 0;
}
