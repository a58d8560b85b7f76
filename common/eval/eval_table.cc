#include "common/eval/eval_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace vfsynth {

bool EvalColumn::IsMissing(int64_t row) const {
  return numeric() ? std::isnan(values[row]) : codes[row] == kMissingCode;
}

int EvalTable::ColumnIndex(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

EvalTable EvalTable::Subset(const std::vector<int64_t>& indices) const {
  EvalTable out;
  out.rows = static_cast<int64_t>(indices.size());
  out.columns.reserve(columns.size());
  for (const EvalColumn& column : columns) {
    EvalColumn copy;
    copy.name = column.name;
    copy.kind = column.kind;
    copy.num_categories = column.num_categories;
    if (column.numeric()) {
      copy.values.reserve(indices.size());
      for (int64_t i : indices) copy.values.push_back(column.values[i]);
    } else {
      copy.codes.reserve(indices.size());
      for (int64_t i : indices) copy.codes.push_back(column.codes[i]);
    }
    out.columns.push_back(std::move(copy));
  }
  return out;
}

absl::StatusOr<EvalTable> MakeEvalTable(const CsvTable& table, const v1::Schema& schema,
                                        const std::string& source) {
  EvalTable out;
  out.rows = static_cast<int64_t>(table.rows.size());
  for (const v1::Column& column : schema.columns()) {
    const int index = table.ColumnIndex(column.name());
    if (index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": no column '", column.name(), "' in the header"));
    }
    EvalColumn typed;
    typed.name = column.name();
    ASSIGN_OR_RETURN(typed.kind, ParseColumnKind(column.type()));
    const std::string missing = MissingToken(schema, column);
    absl::flat_hash_map<std::string, int> category_codes;
    for (int c = 0; c < column.categories_size(); ++c) category_codes[column.categories(c)] = c;
    typed.num_categories = column.categories_size();
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const std::string& text = table.rows[r][index];
      const bool is_missing = text.empty() || text == missing;
      const auto where = [&] {
        const int64_t line =
            r < table.line_numbers.size() ? table.line_numbers[r] : static_cast<int64_t>(r) + 2;
        return absl::StrCat(source, ":", line, " column '", column.name(), "'");
      };
      if (typed.numeric()) {
        double value = std::numeric_limits<double>::quiet_NaN();
        if (!is_missing && !absl::SimpleAtod(text, &value)) {
          return absl::InvalidArgumentError(absl::StrCat(where(), ": not a number: '", text, "'"));
        }
        typed.values.push_back(value);
      } else if (is_missing) {
        typed.codes.push_back(kMissingCode);
      } else {
        const auto it = category_codes.find(text);
        if (it == category_codes.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where(), ": category '", text, "' is not in the schema"));
        }
        typed.codes.push_back(it->second);
      }
    }
    out.columns.push_back(std::move(typed));
  }
  return out;
}

RowSplit SplitRows(int64_t n, double fraction, uint64_t seed) {
  std::vector<int64_t> order = SampleRows(n, 0, seed);
  const auto cut = static_cast<int64_t>(std::llround(fraction * static_cast<double>(n)));
  RowSplit split;
  split.first.assign(order.begin(), order.begin() + cut);
  split.second.assign(order.begin() + cut, order.end());
  return split;
}

std::vector<int64_t> SampleRows(int64_t n, int64_t limit, uint64_t seed) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // std::shuffle's algorithm is implementation-defined; a hand-rolled Fisher–Yates on
  // mt19937_64 keeps splits identical across standard libraries.
  std::mt19937_64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  if (limit > 0 && limit < n) order.resize(limit);
  return order;
}

}  // namespace vfsynth
