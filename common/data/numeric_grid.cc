#include "common/data/numeric_grid.h"

#include <algorithm>
#include <cmath>

namespace vfsynth {
namespace {

// Smallest positive start of the geometric cells, relative to max: four decades.
constexpr double kGeometricSpan = 1e4;

bool IsInteger(const v1::Column& column) { return column.type() == "integer"; }

// Beyond 2^52 consecutive integers are no longer all doubles, so half-way edges would
// collide: such columns take the general grid.
constexpr double kExactIntegers = 4503599627370496.0;  // 2^52

bool OneBinPerValue(const v1::Column& column, int cells) {
  return IsInteger(column) && std::abs(column.min()) < kExactIntegers &&
         std::abs(column.max()) < kExactIntegers &&
         std::floor(column.max()) - std::ceil(column.min()) + 1 <= cells;
}

// Integer bins [a, b) hold a .. ceil(b) - 1 (encoder.cc): edges half-way between
// values give one value per bin.
std::vector<double> PerValueEdges(const v1::Column& column) {
  std::vector<double> edges = {column.min()};
  for (double value = std::ceil(column.min()) + 1; value <= std::floor(column.max()); value += 1) {
    edges.push_back(value - 0.5);
  }
  edges.push_back(column.max());
  return edges;
}

}  // namespace

int GridCells(int64_t records) {
  int cells = kMinGridCells;
  while (cells < kMaxGridCells && records / kRecordsPerGridCell >= 2 * cells) cells *= 2;
  return cells;
}

std::vector<double> NumericGridEdges(const v1::Column& column, int cells) {
  if (OneBinPerValue(column, cells)) return PerValueEdges(column);
  const bool integer = IsInteger(column);
  const double min = integer ? std::ceil(column.min()) : column.min();
  const double max = integer ? std::floor(column.max()) : column.max();
  std::vector<double> edges;
  const int half = cells / 2;
  for (int i = 0; i <= half; ++i) {
    const double t = static_cast<double>(i) / half;
    edges.push_back((1 - t) * min + t * max);  // no overflow for bounds near ±DBL_MAX
  }
  if (min >= 0 && max > 0) {
    const double start = std::max(min, max / kGeometricSpan);
    const double ratio = std::pow(max / start, 1.0 / half);
    for (int i = 0; i < half; ++i) edges.push_back(start * std::pow(ratio, i));
  }
  for (double& edge : edges) {
    if (integer) edge = std::ceil(edge);
    edge = std::clamp(edge, column.min(), column.max());
  }
  edges.front() = column.min();
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  if (edges.back() != column.max()) edges.push_back(column.max());
  return edges;
}

void ResolveNumericGrids(int64_t records, v1::Schema* schema) {
  const int cells = GridCells(records);
  for (v1::Column& column : *schema->mutable_columns()) {
    if (column.type() == "categorical" || column.bins_size() > 0 || column.encoding() == "scalar")
      continue;
    const std::vector<double> edges = NumericGridEdges(column, cells);
    column.clear_encoding();
    for (double edge : edges) column.add_bins(edge);
    column.set_within_bin(!OneBinPerValue(column, cells));
  }
}

}  // namespace vfsynth
