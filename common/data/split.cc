#include "common/data/split.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/party_name.h"
#include "common/base/proto_json.h"
#include "common/base/quoted_value.h"
#include "common/base/status_macros.h"
#include "common/data/encoder.h"
#include "common/data/numeric_grid.h"
#include "common/data/schema.h"

namespace vfsynth {
namespace {

// Returns the id of every row: the existing id column, or the row number.
absl::StatusOr<std::vector<std::string>> RowIds(const CsvTable& joint, const v1::Schema& schema) {
  std::vector<std::string> ids;
  ids.reserve(joint.rows.size());
  const int id_index = schema.id_column().empty() ? -1 : joint.ColumnIndex(schema.id_column());
  if (id_index < 0) {
    for (size_t r = 0; r < joint.rows.size(); ++r) ids.push_back(absl::StrCat(r));
    return ids;
  }
  absl::flat_hash_set<std::string> seen;
  for (size_t r = 0; r < joint.rows.size(); ++r) {
    const std::string& id = joint.rows[r][id_index];
    if (id.empty() || !seen.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat("line ", joint.line_numbers[r], ": id ",
                                                     QuotedValue(id), " is empty or not unique"));
    }
    ids.push_back(id);
  }
  return ids;
}

// A party's table of `columns` (indices into the schema, ascending) over the rows `keep`
// says it holds, with the id first and then, if `user_column` is set, the user column.
PartyTable CutParty(const CsvTable& joint, const v1::Schema& schema, const std::string& name,
                    const std::string& id_column, const std::vector<std::string>& ids,
                    const std::vector<int>& columns, const std::function<bool(size_t)>& keep,
                    const std::string& user_column = "") {
  PartyTable party;
  party.name = name;
  party.schema.set_name(absl::StrCat(schema.name(), schema.name().empty() ? "" : ".", name));
  party.schema.set_id_column(id_column);
  if (schema.has_missing_token()) party.schema.set_missing_token(schema.missing_token());
  party.table.header.push_back(id_column);
  std::vector<int> positions;
  if (!user_column.empty()) {
    party.schema.set_user_column(user_column);
    party.table.header.push_back(user_column);
    positions.push_back(joint.ColumnIndex(user_column));
  }
  for (int index : columns) {
    *party.schema.add_columns() = schema.columns(index);
    party.table.header.push_back(schema.columns(index).name());
    positions.push_back(joint.ColumnIndex(schema.columns(index).name()));
  }
  for (size_t r = 0; r < joint.rows.size(); ++r) {
    if (!keep(r)) continue;
    std::vector<std::string> row{ids[r]};
    for (int position : positions) row.push_back(joint.rows[r][position]);
    party.table.rows.push_back(std::move(row));
    if (r < joint.line_numbers.size()) party.table.line_numbers.push_back(joint.line_numbers[r]);
  }
  return party;
}

absl::StatusOr<SplitResult> SplitRows(const CsvTable& joint, const v1::Schema& schema,
                                      const v1::PartiesFile& parties) {
  const std::string id_column =
      parties.has_id_column() ? parties.id_column() : std::string(kDefaultIdColumn);
  std::vector<int> columns;
  for (int i = 0; i < schema.columns_size(); ++i) {
    if (joint.ColumnIndex(schema.columns(i).name()) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("schema column '", schema.columns(i).name(), "' is not in the input"));
    }
    columns.push_back(i);
  }
  const size_t count = static_cast<size_t>(parties.parties_size());
  if (joint.rows.size() < count) {
    return absl::InvalidArgumentError(
        absl::StrCat(joint.rows.size(), " rows cannot be cut over ", count, " parties"));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> ids, RowIds(joint, schema));
  // Each row's party: the row's turn, or with a user column its user's turn (users in order
  // of first appearance), so that all of a user's rows are held by one party.
  std::vector<size_t> party_of(joint.rows.size());
  for (size_t r = 0; r < joint.rows.size(); ++r) party_of[r] = r % count;
  const std::string& user_column = schema.user_column();
  if (!user_column.empty()) {
    const int user_index = joint.ColumnIndex(user_column);
    if (user_index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("user column '", user_column, "' is not in the input"));
    }
    absl::flat_hash_map<std::string, size_t> turn_of;
    for (size_t r = 0; r < joint.rows.size(); ++r) {
      const std::string& user = joint.rows[r][user_index];
      if (user.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "line ", r < joint.line_numbers.size() ? joint.line_numbers[r] : static_cast<int64_t>(r) + 2,
            ": user column '", user_column, "' is empty"));
      }
      party_of[r] = turn_of.emplace(user, turn_of.size()).first->second % count;
    }
    if (turn_of.size() < count) {
      return absl::InvalidArgumentError(
          absl::StrCat(turn_of.size(), " users cannot be cut over ", count, " parties"));
    }
  }
  absl::flat_hash_set<std::string> names;
  SplitResult result;
  for (size_t k = 0; k < count; ++k) {
    const v1::PartySpec& spec = parties.parties(static_cast<int>(k));
    RETURN_IF_ERROR(AddUniquePartyName(spec.name(), "parties file: party", &names));
    if (spec.columns_size() > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("party '", spec.name(),
                       "' lists columns, but a cut by rows gives every party every column"));
    }
    result.parties.push_back(CutParty(joint, schema, spec.name(), id_column, ids, columns,
                                      [&](size_t r) { return party_of[r] == k; }, user_column));
  }
  return result;
}

}  // namespace

absl::StatusOr<SplitResult> SplitTable(const CsvTable& joint, const v1::Schema& schema,
                                       const v1::PartiesFile& parties) {
  RETURN_IF_ERROR(ValidateSchema(schema));
  if (parties.parties_size() == 0)
    return absl::InvalidArgumentError("parties file lists no parties");
  if (parties.by_rows()) return SplitRows(joint, schema, parties);
  const std::string id_column =
      parties.has_id_column() ? parties.id_column() : std::string(kDefaultIdColumn);
  absl::flat_hash_map<std::string, int> schema_index;
  for (int i = 0; i < schema.columns_size(); ++i) {
    schema_index[schema.columns(i).name()] = i;
    if (joint.ColumnIndex(schema.columns(i).name()) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("schema column '", schema.columns(i).name(), "' is not in the input"));
    }
  }
  absl::flat_hash_map<std::string, std::string> owner;  // column -> party
  absl::flat_hash_set<std::string> party_names;
  SplitResult result;
  ASSIGN_OR_RETURN(const std::vector<std::string> ids, RowIds(joint, schema));
  for (const v1::PartySpec& spec : parties.parties()) {
    RETURN_IF_ERROR(AddUniquePartyName(spec.name(), "parties file: party", &party_names));
    if (spec.columns_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat("party '", spec.name(), "' has no columns"));
    }
    // Keep the joint schema's order inside each party.
    std::vector<int> indices;
    for (const std::string& column : spec.columns()) {
      auto it = schema_index.find(column);
      if (it == schema_index.end()) {
        return absl::InvalidArgumentError(absl::StrCat("party '", spec.name(), "' lists column '",
                                                       column, "', which the schema lacks"));
      }
      if (column == id_column) {
        return absl::InvalidArgumentError(
            absl::StrCat("party '", spec.name(), "' lists the id column '", column, "'"));
      }
      auto [owner_it, inserted] = owner.emplace(column, spec.name());
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("column '", column,
                                                       "' is assigned to both '", owner_it->second,
                                                       "' and '", spec.name(), "'"));
      }
      indices.push_back(it->second);
    }
    std::sort(indices.begin(), indices.end());
    result.parties.push_back(
        CutParty(joint, schema, spec.name(), id_column, ids, indices, [](size_t) { return true; }));
  }
  for (const v1::Column& column : schema.columns()) {
    if (!owner.contains(column.name())) result.unassigned_columns.push_back(column.name());
  }
  return result;
}

std::pair<CsvTable, CsvTable> HoldOutRows(const CsvTable& table, const HoldoutOptions& options) {
  const size_t n = table.rows.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(options.seed);
  std::shuffle(order.begin(), order.end(), rng);
  const auto held = static_cast<size_t>(std::llround(options.fraction * static_cast<double>(n)));
  std::vector<bool> is_held(n, false);
  for (size_t i = 0; i < held; ++i) is_held[order[i]] = true;
  CsvTable kept, out;
  kept.header = out.header = table.header;
  for (size_t r = 0; r < n; ++r) {
    CsvTable& into = is_held[r] ? out : kept;
    into.rows.push_back(table.rows[r]);
    if (r < table.line_numbers.size()) into.line_numbers.push_back(table.line_numbers[r]);
  }
  return {std::move(kept), std::move(out)};
}

absl::StatusOr<CsvTable> KeepValidRows(CsvTable table, const v1::Schema& schema,
                                       const std::string& source, bool skip_bad_rows) {
  v1::Schema resolved = schema;
  ResolveNumericGrids(static_cast<int64_t>(table.rows.size()), &resolved);
  ASSIGN_OR_RETURN(const TableEncoder encoder, TableEncoder::Create(resolved));
  EncodeOptions options;
  options.skip_bad_rows = skip_bad_rows;
  ASSIGN_OR_RETURN(const EncodeResult checked, encoder.Encode(table, source, options));
  if (checked.skipped_rows == 0) return table;
  CsvTable kept;
  kept.header = std::move(table.header);
  for (const int64_t row : checked.kept_rows) {
    kept.rows.push_back(std::move(table.rows[row]));
    if (!table.line_numbers.empty()) kept.line_numbers.push_back(table.line_numbers[row]);
  }
  spdlog::warn("{}: skipped {} rows with values the schema does not admit", source,
               checked.skipped_rows);
  return kept;
}

absl::StatusOr<SplitResult> SplitFiles(const std::string& input, const std::string& schema_path,
                                       const std::string& parties_path, const std::string& out_dir,
                                       bool skip_bad_rows, const HoldoutOptions& holdout) {
  if (!(holdout.fraction >= 0 && holdout.fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("holdout fraction ", holdout.fraction, " is not in [0, 1)"));
  }
  ASSIGN_OR_RETURN(const v1::Schema schema, LoadSchema(schema_path));
  v1::PartiesFile parties;
  RETURN_IF_ERROR(LoadJsonFile(parties_path, &parties));
  CsvReadOptions options;
  options.skip_bad_rows = skip_bad_rows;
  ASSIGN_OR_RETURN(CsvTable read, ReadCsv(input, options));
  ASSIGN_OR_RETURN(CsvTable joint, KeepValidRows(std::move(read), schema, input, skip_bad_rows));
  RETURN_IF_ERROR(MakeDirectories(out_dir));
  if (holdout.fraction > 0) {
    // A row-wise holdout would cut users in two, a user's rows on both sides.
    if (!schema.user_column().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          schema_path, " has a user column: hold rows out before grouping them into users"));
    }
    auto [kept, held] = HoldOutRows(joint, holdout);
    if (kept.rows.empty() || held.rows.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("a holdout fraction of ", holdout.fraction,
                                                     " of ", joint.rows.size(),
                                                     " rows leaves a side empty"));
    }
    RETURN_IF_ERROR(WriteCsv(absl::StrCat(out_dir, "/train.csv"), kept));
    RETURN_IF_ERROR(WriteCsv(absl::StrCat(out_dir, "/holdout.csv"), held));
    joint = std::move(kept);
  }
  ASSIGN_OR_RETURN(SplitResult result, SplitTable(joint, schema, parties));
  for (const PartyTable& party : result.parties) {
    RETURN_IF_ERROR(WriteCsv(absl::StrCat(out_dir, "/", party.name, ".csv"), party.table));
    ASSIGN_OR_RETURN(const std::string json, ToJson(party.schema));
    RETURN_IF_ERROR(
        WriteFileAtomically(absl::StrCat(out_dir, "/", party.name, ".schema.json"), json));
  }
  return result;
}

}  // namespace vfsynth
