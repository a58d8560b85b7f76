#include "common/data/schema_draft.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace vfsynth {
namespace {

struct ColumnValues {
  int64_t missing = 0;
  std::map<std::string, int64_t> counts;  // present values
  bool numeric = true;
  bool integral = true;
  double lo = 0;
  double hi = 0;
};

ColumnValues Collect(const CsvTable& table, size_t column, const std::string& missing_token) {
  ColumnValues values;
  bool first = true;
  for (const std::vector<std::string>& row : table.rows) {
    const std::string& field = column < row.size() ? row[column] : std::string();
    if (field.empty() || field == missing_token) {
      ++values.missing;
      continue;
    }
    ++values.counts[field];
    double number = 0;
    if (!values.numeric) continue;
    if (!absl::SimpleAtod(field, &number) || !std::isfinite(number)) {
      values.numeric = false;
      continue;
    }
    if (number != std::trunc(number)) values.integral = false;
    values.lo = first ? number : std::min(values.lo, number);
    values.hi = first ? number : std::max(values.hi, number);
    first = false;
  }
  return values;
}

}  // namespace

std::pair<double, double> RoundBoundsOutward(double lo, double hi) {
  if (!(hi > lo)) return {lo, hi};
  const double step = std::pow(10.0, std::floor(std::log10(hi - lo)));
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step};
}

absl::StatusOr<SchemaDraft> DraftSchema(const CsvTable& table, const SchemaDraftOptions& options) {
  const int width = static_cast<int>(table.header.size());
  if (table.rows.empty() || width == 0)
    return absl::InvalidArgumentError("the table has no rows or no columns");
  if (options.parties < 1 || options.parties > width) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot cut ", width, " columns into ", options.parties, " parties"));
  }
  SchemaDraft draft;
  draft.schema.set_name("drafted");
  draft.schema.set_id_column("id");
  draft.schema.set_missing_token(options.missing_token);
  for (int c = 0; c < width; ++c) {
    const std::string& name = table.header[c];
    const ColumnValues values = Collect(table, static_cast<size_t>(c), options.missing_token);
    if (values.counts.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("column '", name, "' has no value: drop it from the table"));
    }
    v1::Column* column = draft.schema.add_columns();
    column->set_name(name);
    column->set_nullable(values.missing > 0);
    if (values.numeric) {
      column->set_type(values.integral ? "integer" : "continuous");
      const auto [lo, hi] = RoundBoundsOutward(values.lo, values.hi);
      column->set_min(lo);
      column->set_max(hi);
      draft.warnings.push_back(
          absl::StrFormat("column '%s': bounds [%.15g, %.15g] drafted from the data; replace them "
                          "with the domain's public limits",
                          name, lo, hi));
      continue;
    }
    column->set_type("categorical");
    std::vector<std::string> rare;
    for (const auto& [value, count] : values.counts) {
      column->add_categories(value);
      if (count < options.rare_count) rare.push_back(value);
    }
    if (static_cast<int>(values.counts.size()) > options.max_categories) {
      draft.warnings.push_back(
          absl::StrCat("column '", name, "': ", values.counts.size(),
                       " distinct values: an id or free text? drop it or group its values"));
    } else if (!rare.empty()) {
      draft.warnings.push_back(
          absl::StrCat("column '", name, "': seen fewer than ", options.rare_count,
                       " times: ", absl::StrJoin(rare, ", "),
                       "; listing a category publishes that it occurs: keep only public ones"));
    }
  }
  draft.parties.set_id_column("id");
  for (int p = 0; p < options.parties; ++p) {
    v1::PartySpec* party = draft.parties.add_parties();
    party->set_name(absl::StrCat("party", p + 1));
    // Contiguous groups, sizes differing by at most one.
    for (int c = p * width / options.parties; c < (p + 1) * width / options.parties; ++c) {
      party->add_columns(table.header[c]);
    }
  }
  return draft;
}

}  // namespace vfsynth
