#ifndef VFSYNTH_COMMON_DATA_NUMERIC_GRID_H_
#define VFSYNTH_COMMON_DATA_NUMERIC_GRID_H_

// The encoding of a numeric column without declared bins: bins on a grid derived from
// its declared bounds only (public metadata), with the position inside each bin, so
// that G's one-hot output and the marginal release (a histogram over the grid, noised
// in the DP modes) carry the column's shape, which one scaled value cannot.
//
//   integer columns with at most kGridCells values: one bin per value;
//   otherwise kGridCells / 2 equal-width cells over [min, max], merged with, when
//   min >= 0, kGridCells / 2 geometric cells from max(min, max / 10^4) to max, so both
//   spread-out and heavy-tailed columns (amounts, counts) get resolution where their
//   mass is, whichever they are. Integer edges are rounded up to whole numbers.

#include <vector>

#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

inline constexpr int kGridCells = 16;

// The grid's edges for a numeric column (validated bounds), strictly increasing.
std::vector<double> NumericGridEdges(const v1::Column& column);

// Gives every numeric column without declared bins and without encoding "scalar" its
// grid (bins and within-bin positions; one bin per value needs no position). Columns
// with bins stay as declared, so resolving twice changes nothing.
void ResolveNumericGrids(v1::Schema* schema);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_NUMERIC_GRID_H_
