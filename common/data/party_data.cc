#include "common/data/party_data.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/quoted_value.h"
#include "common/base/status_macros.h"
#include "common/data/csv.h"
#include "common/data/numeric_grid.h"
#include "common/data/schema.h"
#include "common/data/schema_limits.h"

namespace vfsynth {

absl::StatusOr<v1::Schema> LoadPartySchema(const std::string& schema_path) {
  ASSIGN_OR_RETURN(v1::Schema schema, LoadSchema(schema_path));
  // No curator takes a schema over the ceiling: say so here, before the data is read.
  RETURN_IF_ERROR(CheckSchemaWithinLimits(schema, RegistrationLimitsCeiling(), schema_path));
  if (schema.id_column().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(schema_path, ": a party schema must set 'id_column'"));
  }
  return schema;
}

std::vector<std::string> PartyColumns(const v1::Schema& schema) {
  std::vector<std::string> columns = {schema.id_column()};
  const auto add = [&](const std::string& name) {
    if (std::find(columns.begin(), columns.end(), name) == columns.end()) columns.push_back(name);
  };
  if (!schema.user_column().empty()) add(schema.user_column());
  for (const v1::Column& column : schema.columns()) add(column.name());
  return columns;
}

absl::StatusOr<PartyData> EncodePartyTable(const CsvTable& table, const std::string& source,
                                           v1::Schema schema, bool skip_bad_rows,
                                           int64_t grid_records) {
  ResolveNumericGrids(grid_records >= 0 ? grid_records : static_cast<int64_t>(table.rows.size()),
                      &schema);
  const int id_index = table.ColumnIndex(schema.id_column());
  if (id_index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": id column '", schema.id_column(), "' is not in the header"));
  }
  const int user_index =
      schema.user_column().empty() ? -1 : table.ColumnIndex(schema.user_column());
  if (!schema.user_column().empty() && user_index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": user column '", schema.user_column(), "' is not in the header"));
  }
  PartyData data;
  ASSIGN_OR_RETURN(data.encoder, TableEncoder::Create(schema));
  // The numeric grids, sized by the record count, set the width.
  RETURN_IF_ERROR(
      CheckEncodedWidthWithinLimits(data.encoder.width(), RegistrationLimitsCeiling(), source));
  EncodeOptions encode_options;
  encode_options.skip_bad_rows = skip_bad_rows;
  ASSIGN_OR_RETURN(EncodeResult result, data.encoder.Encode(table, source, encode_options));
  absl::flat_hash_set<std::string> seen;
  for (int64_t row : result.kept_rows) {
    const std::string& id = table.rows[row][id_index];
    if (id.empty() || !seen.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", table.line_numbers[row], ": id ",
                                                     QuotedValue(id), " is empty or not unique"));
    }
    data.ids.push_back(id);
    if (user_index < 0) continue;
    const std::string& user = table.rows[row][user_index];
    if (user.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", table.line_numbers[row],
                                                     ": user column '", schema.user_column(),
                                                     "' is empty"));
    }
    data.users.push_back(user);
  }
  data.encoded = std::move(result.table);
  data.skipped_rows = table.skipped_rows + result.skipped_rows;
  for (int64_t count : result.clipped_values) data.clipped_values += count;
  return data;
}

absl::StatusOr<PartyData> LoadPartyData(const std::string& csv_path, const std::string& schema_path,
                                        bool skip_bad_rows, int64_t grid_records) {
  ASSIGN_OR_RETURN(v1::Schema schema, LoadPartySchema(schema_path));
  CsvReadOptions read_options;
  read_options.skip_bad_rows = skip_bad_rows;
  ASSIGN_OR_RETURN(const CsvTable table, ReadCsv(csv_path, read_options));
  return EncodePartyTable(table, csv_path, std::move(schema), skip_bad_rows, grid_records);
}

void ReorderRows(const std::vector<int64_t>& order, PartyData* data) {
  const size_t width = static_cast<size_t>(data->encoded.width);
  const size_t rows = static_cast<size_t>(data->encoded.rows);
  std::vector<std::string> ids;
  ids.reserve(order.size());
  std::vector<std::string> users;
  // The rows `order` leaves out go after it, so `full` is a permutation of the rows; it is
  // applied to the encoded values in place, cycle by cycle, and the tail dropped: a second
  // copy of the table (the party's largest buffer) is never needed.
  std::vector<int64_t> full(order);
  std::vector<bool> kept(rows, false);
  for (const int64_t row : order) {
    kept[static_cast<size_t>(row)] = true;
    ids.push_back(data->ids[static_cast<size_t>(row)]);
    if (!data->users.empty()) users.push_back(data->users[static_cast<size_t>(row)]);
  }
  for (size_t row = 0; row < rows; ++row) {
    if (!kept[row]) full.push_back(static_cast<int64_t>(row));
  }
  float* values = data->encoded.values.data();
  std::vector<float> held(width);
  std::vector<bool> placed(rows, false);
  for (size_t start = 0; start < rows; ++start) {
    if (placed[start]) continue;
    // Position p takes row full[p]: follow the cycle from `start`, holding its first row.
    std::copy_n(values + start * width, width, held.begin());
    size_t p = start;
    while (static_cast<size_t>(full[p]) != start) {
      const size_t from = static_cast<size_t>(full[p]);
      std::copy_n(values + from * width, width, values + p * width);
      placed[p] = true;
      p = from;
    }
    std::copy(held.begin(), held.end(), values + p * width);
    placed[p] = true;
  }
  data->encoded.values.resize(order.size() * width);
  data->encoded.values.shrink_to_fit();
  data->users = std::move(users);
  data->encoded.rows = static_cast<int64_t>(order.size());
  data->ids = std::move(ids);
}

}  // namespace vfsynth
