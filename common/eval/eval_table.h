#ifndef VFSYNTH_COMMON_EVAL_EVAL_TABLE_H_
#define VFSYNTH_COMMON_EVAL_EVAL_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "common/data/schema.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// Code of a missing categorical value in EvalColumn::codes.
inline constexpr int kMissingCode = -1;

// One schema column, typed: numerics as doubles (NaN = missing), categoricals as
// indices into the schema's category list (kMissingCode = missing).
struct EvalColumn {
  std::string name;
  ColumnKind kind = ColumnKind::kCategorical;
  int num_categories = 0;      // categoricals only
  std::vector<double> values;  // numerics only
  std::vector<int> codes;      // categoricals only

  bool numeric() const { return kind != ColumnKind::kCategorical; }
  bool IsMissing(int64_t row) const;
};

// A table in the schema's column order, typed for the metrics. Columns not in the
// schema (e.g. an id) are ignored.
struct EvalTable {
  std::vector<EvalColumn> columns;
  int64_t rows = 0;

  int ColumnIndex(const std::string& name) const;
  // The rows listed in `indices`, in that order.
  EvalTable Subset(const std::vector<int64_t>& indices) const;
};

// Types `table` by `schema`. An unknown category or an unparsable number is an
// error naming the source line and column; `source` names the input.
absl::StatusOr<EvalTable> MakeEvalTable(const CsvTable& table, const v1::Schema& schema,
                                        const std::string& source);

// Deterministic random split of [0, n): a `fraction` share (rounded) goes first.
struct RowSplit {
  std::vector<int64_t> first;
  std::vector<int64_t> second;
};
RowSplit SplitRows(int64_t n, double fraction, uint64_t seed);

// min(n, limit) distinct row indices in random order (all rows when limit <= 0).
std::vector<int64_t> SampleRows(int64_t n, int64_t limit, uint64_t seed);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_EVAL_TABLE_H_
