#ifndef VFSYNTH_COMMON_MARGINALS_PARTY_MEASUREMENT_H_
#define VFSYNTH_COMMON_MARGINALS_PARTY_MEASUREMENT_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/marginals/central_measurement.h"
#include "common/random/secure_random.h"
#include "common/secure/cross_counts.h"
#include "common/secure/packed_counts.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth::marginals {

// What one party counts of a measured-marginals plan (docs/protocol.md, "Measured
// marginals"). Histogram indices are into plan.measurements, column indices into
// plan.columns; a party's columns are contiguous there, from `first_column` on.

// The noisy counts of `histograms` (each of this party's columns only), concatenated in
// that order: exact counts of `table` (the party's aligned encoded rows, laid out as
// `own` = LayoutOf its encoder alone) plus, with `noise`, a discrete Gaussian of the
// histogram's σ per count.
absl::StatusOr<std::vector<int64_t>> OwnCounts(const torch::Tensor& table,
                                               const MeasuredLayout& own, int first_column,
                                               const v1::PrivacyPlan& plan,
                                               const std::vector<int>& histograms,
                                               SecureRandom* noise);

// Per row of `table`, the cell of `block` in its 2-way tables (its one-hot's index, a
// numeric column's bins merged as the plan's settings merge them): in [0, pair_width).
std::vector<int32_t> PairCells(const torch::Tensor& table, const OutputBlock& block,
                               const v1::MeasurementConfig& settings);

// The cross histograms of two parties low < high: low's columns in them (low encrypts
// these, in this order), high's, and the histograms, all ascending.
struct CrossPair {
  int low = 0;
  int high = 0;
  std::vector<int> low_columns;
  std::vector<int> high_columns;
  std::vector<int> histograms;
};
// Every pair of parties with cross histograms, in (low, high) order.
std::vector<CrossPair> CrossPairsOf(const v1::PrivacyPlan& plan);
// The packed layout of low's columns (their pair widths), at `modulus_bits`.
absl::StatusOr<secure::SlotLayout> LowLayout(const v1::PrivacyPlan& plan, const CrossPair& pair,
                                             int modulus_bits);

// Per slot of low's layout, the σ each holder adds to the sums by high's `high_column`:
// the σ of the histogram of the slot's column with it (0 with `noiseless`), or
// secure::kMaskedSlot where the plan has no such histogram (its count is not released).
std::vector<double> SlotSigmas(const v1::PrivacyPlan& plan, const CrossPair& pair,
                               const secure::SlotLayout& layout, int high_column, bool noiseless);

// The counts of pair.histograms, concatenated, from low's decrypted counts by each of
// high's columns (`by_high_column`, in pair.high_columns' order): cell a·width_b + b over
// the columns' pair widths.
absl::StatusOr<std::vector<int64_t>> CrossHistogramCounts(
    const v1::PrivacyPlan& plan, const CrossPair& pair, const secure::SlotLayout& layout,
    const std::vector<secure::CrossCounts>& by_high_column);

}  // namespace vfsynth::marginals

#endif  // VFSYNTH_COMMON_MARGINALS_PARTY_MEASUREMENT_H_
