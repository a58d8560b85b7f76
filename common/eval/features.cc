#include "common/eval/features.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"

namespace vfsynth {

absl::StatusOr<LabeledData> MakeLabeledData(const EvalTable& table, const v1::Schema& schema,
                                            const std::string& target,
                                            const std::vector<std::string>& excluded) {
  const int target_index = table.ColumnIndex(target);
  if (target_index < 0)
    return absl::InvalidArgumentError(absl::StrCat("no target column '", target, "'"));
  const EvalColumn& label = table.columns[target_index];
  if (label.numeric()) {
    return absl::InvalidArgumentError(
        absl::StrCat("target column '", target, "' must be categorical (classification only)"));
  }
  if (static_cast<int>(table.columns.size()) != schema.columns_size()) {
    return absl::InvalidArgumentError("table and schema disagree on the columns");
  }
  std::vector<bool> feature(table.columns.size(), true);
  feature[target_index] = false;
  for (const std::string& name : excluded) {
    const int index = table.ColumnIndex(name);
    if (index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("no column '", name, "' to leave out of the features"));
    }
    feature[index] = false;
  }
  // Column layout.
  std::vector<int> offsets(table.columns.size(), -1);
  int width = 0;
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (!feature[c]) continue;
    offsets[c] = width;
    const bool nullable = schema.columns(c).nullable();
    width += table.columns[c].numeric() ? 1 + (nullable ? 1 : 0)
                                        : table.columns[c].num_categories + (nullable ? 1 : 0);
  }
  LabeledData data;
  data.num_classes = label.num_categories;
  data.x.cols = width;
  for (int64_t r = 0; r < table.rows; ++r) {
    if (label.codes[r] == kMissingCode) continue;
    data.y.push_back(label.codes[r]);
    const size_t base = data.x.values.size();
    data.x.values.resize(base + width, 0.0f);
    float* row = data.x.values.data() + base;
    for (size_t c = 0; c < table.columns.size(); ++c) {
      if (offsets[c] < 0) continue;
      const EvalColumn& column = table.columns[c];
      const v1::Column& spec = schema.columns(c);
      if (column.numeric()) {
        const double v = column.values[r];
        if (std::isnan(v)) {
          if (spec.nullable()) row[offsets[c] + 1] = 1.0f;
          continue;
        }
        const double lo = spec.min(), hi = spec.max();
        const double scaled = hi > lo ? 2 * (std::clamp(v, lo, hi) - lo) / (hi - lo) - 1 : 0;
        row[offsets[c]] = static_cast<float>(scaled);
      } else if (column.codes[r] == kMissingCode) {
        if (spec.nullable()) row[offsets[c] + column.num_categories] = 1.0f;
      } else {
        row[offsets[c] + column.codes[r]] = 1.0f;
      }
    }
  }
  data.x.rows = static_cast<int64_t>(data.y.size());
  return data;
}

}  // namespace vfsynth
