#ifndef VFSYNTH_COMMON_EVAL_DCR_H_
#define VFSYNTH_COMMON_EVAL_DCR_H_

#include <cstdint>
#include <vector>

#include "common/eval/eval_table.h"

namespace vfsynth {

// Per-column scales for DCR: the value range of each numeric column over the union
// of `tables` (0 for categoricals and constant columns).
std::vector<double> ColumnRanges(const std::vector<const EvalTable*>& tables);

// SDMetrics' distance to closest record (anchors §4): for each row of `rows`, the
// minimum over `reference` rows of the mean over columns of
//   numeric: min(|x - y| / range, 1), or (x != y) when range is 0;
//   categorical: x != y;   missing vs value: 1;   missing vs missing: 0.
std::vector<double> DistanceToClosestRecord(const EvalTable& rows, const EvalTable& reference,
                                            const std::vector<double>& ranges, int threads = 2);

// Each row's distance (as above) to its nearest *other* row of the same table.
std::vector<double> NearestNeighbourDistances(const EvalTable& table,
                                              const std::vector<double>& ranges, int threads = 2);

struct DcrOptions {
  int64_t max_synthetic_rows = 1000;  // subsample: cost is rows x reference rows x columns
  uint64_t seed = 0;
  int threads = 2;
};

struct DcrResult {
  std::vector<double> synthetic_to_train;  // one DCR per sampled synthetic row
  std::vector<double> synthetic_to_holdout;
  double share_closer_to_train = 0;   // P[DCR_train < DCR_holdout]
  double overfitting_protection = 0;  // min(2 (1 - share), 1)  (SDMetrics)
  double median_to_train = 0;
  double median_to_holdout = 0;
  int64_t reference_rows = 0;  // rows of train and of holdout used (equal)
};

// DCR of synthetic rows to `train` and to `holdout`. The larger of the two reference
// tables is subsampled to the size of the smaller so "closer to train" is 0.5 when
// the generator did not memorise; ranges come from train ∪ holdout.
DcrResult ComputeDcr(const EvalTable& synthetic, const EvalTable& train, const EvalTable& holdout,
                     const DcrOptions& options);

double Median(std::vector<double> values);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_DCR_H_
