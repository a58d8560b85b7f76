#include "common/eval/audit_canary.h"

#include <cmath>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/status_macros.h"
#include "common/eval/dcr.h"
#include "common/eval/eval_table.h"

namespace vfsynth {
namespace {

// The declared bound of a numeric column farther from the present values' median.
std::string FarBound(const v1::Column& column, const EvalColumn& values) {
  std::vector<double> present;
  for (double v : values.values) {
    if (!std::isnan(v)) present.push_back(v);
  }
  const double median = present.empty() ? column.min() : Median(present);
  double bound = median - column.min() > column.max() - median ? column.min() : column.max();
  if (values.kind == ColumnKind::kInteger) {
    bound = bound == column.min() ? std::ceil(bound) : std::floor(bound);
  }
  return absl::StrFormat("%.17g", bound);
}

// The least frequent declared category of a categorical column (the first of a tie).
std::string RarestCategory(const v1::Column& column, const EvalColumn& values) {
  std::vector<int64_t> counts(column.categories_size(), 0);
  for (int code : values.codes) {
    if (code != kMissingCode) ++counts[code];
  }
  int rarest = 0;
  for (int c = 1; c < column.categories_size(); ++c) {
    if (counts[c] < counts[rarest]) rarest = c;
  }
  return column.categories(rarest);
}

// An id that no row of `data` has.
std::string FreshId(const CsvTable& data, int id_index) {
  absl::flat_hash_set<std::string> taken;
  for (const auto& row : data.rows) taken.insert(row[id_index]);
  std::string id = "audit-canary";
  for (int suffix = 1; taken.contains(id); ++suffix) id = absl::StrCat("audit-canary-", suffix);
  return id;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> CanaryRecord(const CsvTable& data,
                                                      const v1::Schema& schema) {
  ASSIGN_OR_RETURN(const EvalTable table, MakeEvalTable(data, schema, "audit data"));
  std::vector<std::string> record(data.header.size());
  for (int c = 0; c < schema.columns_size(); ++c) {
    const v1::Column& column = schema.columns(c);
    const EvalColumn& values = table.columns[c];  // MakeEvalTable checked the column is there
    record[data.ColumnIndex(column.name())] =
        values.numeric() ? FarBound(column, values) : RarestCategory(column, values);
  }
  if (const int id = data.ColumnIndex(schema.id_column()); !schema.id_column().empty() && id >= 0) {
    record[id] = FreshId(data, id);
  }
  return record;
}

}  // namespace vfsynth
