#ifndef VFSYNTH_COMMON_GAN_LABEL_PAIRS_H_
#define VFSYNTH_COMMON_GAN_LABEL_PAIRS_H_

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/encoder.h"
#include "common/gan/marginal_target.h"
#include "common/random/secure_random.h"

namespace vfsynth {

// Label pairs (training.label_column; docs/privacy.md, "Label pairs"). When a label's
// whole dependence on the other columns crosses parties, only the shared critic conveys
// it, and under DP's noise it conveys it poorly. Instead:
//  1. the label's holder releases one label per aligned record by randomized response
//     (RandomizedLabels);
//  2. every other party counts those labels against each of its one-hot blocks and
//     releases the tables with the Gaussian mechanism (LabelPairCounts);
//  3. the curator undoes the labels' known confusion (LabelKeepProbability) and pulls
//     G's batches towards the tables (LabelPairTarget, a MarginalTarget of pairs).

// The holder's release: k-ary randomized response with parameter ε on each row's
// one-hot label (rows x k): the row's category with probability LabelKeepProbability,
// else one of the other k − 1 uniformly. int64 [rows]. ε-DP per record, accounted by its
// exact RDP curve (privacy::RandomizedResponseRdp). It replaced a Gaussian on the one-hot
// label whose argmax was released: for binary labels that is randomized response too,
// but charged as a Gaussian; at the same RDP near the orders that decide the run's ε,
// randomized response keeps a label with probability 0.728 instead of 0.633 (dpsgd at
// ε = 10; strict 0.857 instead of 0.685), and the curator's inversion multiplies the
// tables' noise by 1/(2·keep − 1).
torch::Tensor RandomizedLabels(const torch::Tensor& one_hot, double epsilon, SecureRandom& noise);

// P(RandomizedLabels keeps a row's label) for k categories: e^ε / (e^ε + k − 1).
double LabelKeepProbability(double epsilon, int categories);

// The inverse of randomized response's confusion of k categories, M = a·I + q·J with
// a + q = keep and q = (1 − keep)/(k − 1): M⁻¹ = (I − q/(a + k·q)·J)/a (float64, k x k);
// it keeps totals. An error when keep leaves no information (a <= 0).
absl::StatusOr<torch::Tensor> LabelUnconfusion(double keep, int categories);

// A non-holder's release: per one-hot block b (in order), the k x width(b) counts of
// (noised label, b's cell) over the table's rows, row-major, concatenated, float64. With
// `noise` (not null), every count gets N(0, (z·√(2m))²) for m blocks: for fixed labels, replacing a
// record moves one count down and one up in each table. No blocks: an empty release.
absl::StatusOr<torch::Tensor> LabelPairCounts(const torch::Tensor& labels, int categories,
                                              const torch::Tensor& table,
                                              const std::vector<OutputBlock>& one_hot_blocks,
                                              double noise_multiplier, SecureRandom* noise);

// Hex SHA-256 of the labels (little-endian int32): a party's tables name the labels
// they were counted against.
std::string LabelsDigest(const std::vector<int32_t>& labels);

// Cells of LabelPairCounts' release for these blocks.
int64_t LabelPairCells(int categories, const std::vector<OutputBlock>& one_hot_blocks);

// The curator's target over G's joint output. `encoders` in party order (their slices
// concatenated), `holder` holds `label` (a block of its own encoding), `counts[p]` is
// party p's LabelPairCounts (ignored for the holder). Each table's confusion by the
// randomized response (keep probability of `label_epsilon`) is inverted, and the result
// projected onto the distributions over `rows` records (ProjectToTotal).
absl::StatusOr<MarginalTarget> LabelPairTarget(const std::vector<const TableEncoder*>& encoders,
                                               int holder, const OutputBlock& label,
                                               const std::vector<torch::Tensor>& counts,
                                               double label_epsilon, int64_t rows);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_LABEL_PAIRS_H_
