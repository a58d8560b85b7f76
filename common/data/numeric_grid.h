#ifndef VFSYNTH_COMMON_DATA_NUMERIC_GRID_H_
#define VFSYNTH_COMMON_DATA_NUMERIC_GRID_H_

// The encoding of a numeric column without declared bins: bins on a grid derived from
// its declared bounds only (public metadata), with the position inside each bin, so
// that G's one-hot output and the marginal release (a histogram over the grid, noised
// in the DP modes) carry the column's shape, which one scaled value cannot.
//
//   integer columns with at most `cells` values: one bin per value;
//   otherwise cells / 2 equal-width cells over [min, max], merged with, when
//   min >= 0, cells / 2 geometric cells from max(min, max / 10^4) to max, so both
//   spread-out and heavy-tailed columns (amounts, counts) get resolution where their
//   mass is, whichever they are. Integer edges are rounded up to whole numbers.

#include <cstdint>
#include <vector>

#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// The cell count follows the party's record count N, which the curator learns at
// registration and which replacing one record leaves unchanged: the largest power of two
// at most N / kRecordsPerGridCell, within [kMinGridCells, kMaxGridCells]. Finer cells
// resolve more of a column's shape and of the label's dependence inside it; with few
// records per cell, the noise each cell's share of the marginal release carries outweighs that.
inline constexpr int64_t kRecordsPerGridCell = 400;
inline constexpr int kMinGridCells = 16;
inline constexpr int kMaxGridCells = 32;
int GridCells(int64_t records);

// The grid's edges for a numeric column (validated bounds) over `cells` cells,
// strictly increasing.
std::vector<double> NumericGridEdges(const v1::Column& column, int cells);

// Gives every numeric column without declared bins and without encoding "scalar" its
// grid for a party of `records` records (bins and within-bin positions; one bin per value
// needs no position). Columns with bins stay as declared, so resolving twice changes nothing.
void ResolveNumericGrids(int64_t records, v1::Schema* schema);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_NUMERIC_GRID_H_
