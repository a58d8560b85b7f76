#ifndef VFSYNTH_COMMON_DATA_PARTY_DATA_H_
#define VFSYNTH_COMMON_DATA_PARTY_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "common/data/encoder.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// One party's private table, encoded and ready for training.
struct PartyData {
  TableEncoder encoder;
  std::vector<std::string> ids;  // record id of each encoded row
  // schema.user_column's value of each encoded row (empty without a user column).
  std::vector<std::string> users;
  EncodedTable encoded;
  int64_t skipped_rows = 0;    // malformed rows dropped (skip_bad_rows only)
  int64_t clipped_values = 0;  // numeric values clipped to declared bounds
};

// A party's schema: valid, within every curator's ceiling, and naming its id column.
absl::StatusOr<v1::Schema> LoadPartySchema(const std::string& schema_path);

// The columns a party's table must have: the id column, the user column (if any), then
// the schema's columns.
std::vector<std::string> PartyColumns(const v1::Schema& schema);

// Validates and encodes a party's table, whatever it was read from (a CSV file,
// PostgreSQL): `source` names it in errors, with table.line_numbers as positions. The id
// column must be present, non-empty and unique. Numeric columns without declared bins are
// encoded over their public grid, sized by the table's record count (numeric_grid.h) or,
// with `grid_records` >= 0, by that count (the horizontal topology: one grid for every
// party). A schema's user_column must be present and non-empty in every row. An empty
// value is missing.
absl::StatusOr<PartyData> EncodePartyTable(const CsvTable& table, const std::string& source,
                                           v1::Schema schema, bool skip_bad_rows,
                                           int64_t grid_records = -1);

// Reads a party CSV with its schema (LoadPartySchema, EncodePartyTable).
absl::StatusOr<PartyData> LoadPartyData(const std::string& csv_path, const std::string& schema_path,
                                        bool skip_bad_rows, int64_t grid_records = -1);

// Keeps the rows listed in `order`, in that order (ids and encoded values).
void ReorderRows(const std::vector<int64_t>& order, PartyData* data);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_PARTY_DATA_H_
