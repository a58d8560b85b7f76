#include "common/eval/dcr.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

namespace vfsynth {

std::vector<double> ColumnRanges(const std::vector<const EvalTable*>& tables) {
  std::vector<double> ranges;
  if (tables.empty()) return ranges;
  for (size_t c = 0; c < tables[0]->columns.size(); ++c) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const EvalTable* table : tables) {
      if (!table->columns[c].numeric()) continue;
      for (double v : table->columns[c].values) {
        if (!std::isnan(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      }
    }
    ranges.push_back(hi > lo ? hi - lo : 0.0);
  }
  return ranges;
}

namespace {

std::vector<double> ClosestDistances(const EvalTable& rows, const EvalTable& reference,
                                     const std::vector<double>& ranges, int threads,
                                     bool skip_same_index) {
  std::vector<double> out(rows.rows, 0.0);
  if (reference.rows == 0) {
    std::fill(out.begin(), out.end(), std::numeric_limits<double>::quiet_NaN());
    return out;
  }
  const size_t columns = reference.columns.size();
  threads = std::max(1, threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      // Column-at-a-time accumulation keeps the inner loop sequential in memory.
      std::vector<double> sum(reference.rows);
      for (int64_t i = t; i < rows.rows; i += threads) {
        std::fill(sum.begin(), sum.end(), 0.0);
        for (size_t c = 0; c < columns; ++c) {
          const EvalColumn& ref = reference.columns[c];
          const EvalColumn& col = rows.columns[c];
          if (ref.numeric()) {
            const double x = col.values[i];
            const double range = ranges[c];
            for (int64_t j = 0; j < reference.rows; ++j) {
              const double y = ref.values[j];
              const bool xn = std::isnan(x), yn = std::isnan(y);
              double d;
              if (xn || yn) {
                d = xn && yn ? 0.0 : 1.0;
              } else if (range > 0) {
                d = std::min(std::abs(x - y) / range, 1.0);
              } else {
                d = x != y ? 1.0 : 0.0;
              }
              sum[j] += d;
            }
          } else {
            const int x = col.codes[i];
            for (int64_t j = 0; j < reference.rows; ++j) sum[j] += ref.codes[j] != x ? 1.0 : 0.0;
          }
        }
        if (skip_same_index) sum[i] = std::numeric_limits<double>::infinity();
        out[i] = *std::min_element(sum.begin(), sum.end()) / static_cast<double>(columns);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  return out;
}

}  // namespace

std::vector<double> DistanceToClosestRecord(const EvalTable& rows, const EvalTable& reference,
                                            const std::vector<double>& ranges, int threads) {
  return ClosestDistances(rows, reference, ranges, threads, false);
}

std::vector<double> NearestNeighbourDistances(const EvalTable& table,
                                              const std::vector<double>& ranges, int threads) {
  if (table.rows < 2) return std::vector<double>(table.rows, 0.0);
  return ClosestDistances(table, table, ranges, threads, true);
}

double Median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2 == 1) return values[mid];
  const double upper = values[mid];
  return 0.5 * (upper + *std::max_element(values.begin(), values.begin() + mid));
}

DcrResult ComputeDcr(const EvalTable& synthetic, const EvalTable& train, const EvalTable& holdout,
                     const DcrOptions& options) {
  DcrResult result;
  const int64_t size = std::min(train.rows, holdout.rows);
  result.reference_rows = size;
  const EvalTable train_ref = train.Subset(SampleRows(train.rows, size, options.seed + 1));
  const EvalTable holdout_ref = holdout.Subset(SampleRows(holdout.rows, size, options.seed + 2));
  const std::vector<double> ranges = ColumnRanges({&train_ref, &holdout_ref});
  const EvalTable sample =
      synthetic.Subset(SampleRows(synthetic.rows, options.max_synthetic_rows, options.seed + 3));
  result.synthetic_to_train = DistanceToClosestRecord(sample, train_ref, ranges, options.threads);
  result.synthetic_to_holdout =
      DistanceToClosestRecord(sample, holdout_ref, ranges, options.threads);
  int64_t closer = 0;
  for (int64_t i = 0; i < sample.rows; ++i) {
    if (result.synthetic_to_train[i] < result.synthetic_to_holdout[i]) ++closer;
  }
  result.share_closer_to_train =
      sample.rows == 0 ? 0 : static_cast<double>(closer) / static_cast<double>(sample.rows);
  result.overfitting_protection = std::min(2 * (1 - result.share_closer_to_train), 1.0);
  result.median_to_train = Median(result.synthetic_to_train);
  result.median_to_holdout = Median(result.synthetic_to_holdout);
  return result;
}

}  // namespace vfsynth
