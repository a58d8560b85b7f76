#ifndef VFSYNTH_COMMON_MODEL_LABEL_PAIRS_H_
#define VFSYNTH_COMMON_MODEL_LABEL_PAIRS_H_

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/encoder.h"
#include "common/model/marginal_target.h"

namespace vfsynth {

// Label pairs (training.label_column; docs/privacy.md, "Label pairs"). When a label's
// whole dependence on the other columns crosses parties, only the shared critic conveys
// it, and under DP's noise it conveys it poorly (docs/evaluation.md, "Stop 21"). Instead:
//  1. the label's holder releases one noised label per aligned record (NoisyLabels);
//  2. every other party counts those labels against each of its one-hot blocks and
//     releases the tables with the Gaussian mechanism (LabelPairCounts);
//  3. the curator undoes the labels' known confusion (LabelKeepProbability) and pulls
//     G's batches towards the tables (LabelPairTarget, a MarginalTarget of pairs).

// The holder's release: each row's one-hot label (rows x k) plus N(0, (z·√2)²) per
// coordinate (replace-one L2 sensitivity √2), and only the argmax leaves. int64 [rows].
torch::Tensor NoisyLabels(const torch::Tensor& one_hot, double noise_multiplier, at::Generator& noise);

// P(NoisyLabels keeps a row's label) for k categories: E_t[Φ(t + 1/s)^(k−1)], s = z·√2
// (k = 2: Φ(1/(2z))). Every other category is then drawn with (1 − keep)/(k − 1).
double LabelKeepProbability(double noise_multiplier, int categories);

// A non-holder's release: per one-hot block b (in order), the k x width(b) counts of
// (noised label, b's cell) over the table's rows, row-major, concatenated, float64. With
// `noise`, every count gets N(0, (z·√(2m))²) for m blocks: for fixed labels, replacing a
// record moves one count down and one up in each table. No blocks: an empty release.
absl::StatusOr<torch::Tensor> LabelPairCounts(const torch::Tensor& labels, int categories,
                                              const torch::Tensor& table,
                                              const std::vector<OutputBlock>& one_hot_blocks,
                                              double noise_multiplier, std::optional<at::Generator> noise);

// Hex SHA-256 of the labels (little-endian int32): a party's tables name the labels
// they were counted against.
std::string LabelsDigest(const std::vector<int32_t>& labels);

// Cells of LabelPairCounts' release for these blocks.
int64_t LabelPairCells(int categories, const std::vector<OutputBlock>& one_hot_blocks);

// The curator's target over G's joint output. `encoders` in party order (their slices
// concatenated), `holder` holds `label` (a block of its own encoding), `counts[p]` is
// party p's LabelPairCounts (ignored for the holder). Each table's confusion by the
// label noise (keep probability of `label_noise_multiplier`) is inverted, and the result
// projected onto the distributions over `rows` records (ProjectToTotal).
absl::StatusOr<MarginalTarget> LabelPairTarget(const std::vector<const TableEncoder*>& encoders, int holder,
                                               const OutputBlock& label,
                                               const std::vector<torch::Tensor>& counts,
                                               double label_noise_multiplier, int64_t rows);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_MODEL_LABEL_PAIRS_H_
