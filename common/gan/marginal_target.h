#ifndef VFSYNTH_COMMON_GAN_MARGINAL_TARGET_H_
#define VFSYNTH_COMMON_GAN_MARGINAL_TARGET_H_

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/config.h"
#include "common/data/encoder.h"
#include "common/random/secure_random.h"

namespace vfsynth {

// The marginal of every one-hot block of a party's encoded columns (categories, declared
// bins, present/missing indicators), as a target G's batches are pulled towards. WGAN
// critics trained under DP-SGD see the marginals only through heavy noise, while one
// histogram per block released once with the Gaussian mechanism is nearly exact for a
// small part of the same ε (docs/privacy.md, "Marginal release").
//
// A block of declared bins with a within-bin position (OutputBlock::position_offset) is
// refined: each bin is split into `position_bins` equal parts of the position's range
// [-1, 1], so the target also carries the shape inside the bins (a spike at a bin's edge,
// say), which the bins alone cannot. Its histogram has bins x position_bins cells plus
// the missing slot, if any. Other scalar (tanh) columns have no target.
//
// With options.pair_cells > 0, every pair of the party's one-hot blocks whose joint table
// (bins unrefined) has at most that many cells also gets its 2-way histogram: the
// dependence between a party's own columns, which a 1-way target cannot carry and a
// noised critic conveys poorly. Which pairs are covered depends on the schema only.
class MarginalTarget {
 public:
  // Histograms of `table`'s one-hot blocks (and selected pairs), normalised. With `noise` (not
  // null) (a DP mode), each count first gets N(0, (z·√(2m))²) noise for m histograms: under
  // replace-one, a record moves one count down and one up in every histogram, an L2
  // change of √(2m). The noised counts are then projected onto the histograms with the
  // table's row count (public under replace-one) as total (ProjectToTotal). The caller
  // charges the release (run_accounting.h, MarginalReleaseCharge) before any of it leaves.
  static absl::StatusOr<MarginalTarget> FromTable(const torch::Tensor& table,
                                                  const std::vector<OutputBlock>& blocks,
                                                  const MarginalOptions& options,
                                                  double noise_multiplier, SecureRandom* noise);

  // A target of the given pairs of `blocks` (indices into them) only, without 1-way
  // histograms, from their probabilities (row-major, in pair order; each a probability
  // vector). Label pairs (label_pairs.h) build theirs this way.
  static absl::StatusOr<MarginalTarget> FromPairProbabilities(
      std::vector<OutputBlock> blocks, std::vector<std::pair<int, int>> pairs,
      const torch::Tensor& probabilities);

  // The 1-way histograms of every one of `blocks` (one-hot blocks, refined by
  // `position_bins`) and the 2-way tables of `pairs` (indices into them), without
  // probabilities: the measured-marginals mode's release shape. Fill with WithProbabilities.
  // With `pair_groups` (one per block, or empty), a block of bins with positive groups g
  // enters its 2-way tables with its bins merged into g runs of consecutive bins
  // (PairGroups), its missing slots as they are.
  // With `unmerged_pairs` (one per pair, or empty), a pair marked true sees both its blocks
  // at their full width (no merge).
  static absl::StatusOr<MarginalTarget> OfHistograms(std::vector<OutputBlock> blocks,
                                                     std::vector<std::pair<int, int>> pairs,
                                                     int position_bins,
                                                     const std::vector<int>& pair_groups = {},
                                                     const std::vector<bool>& unmerged_pairs = {});

  // Post-processing of noised counts of this shape's histograms (HistogramSizes' order;
  // float64): `rounds` rounds of (a) every histogram shifted to sum to `total`, (b) every
  // block's margin at its coarsest common resolution (its merged runs, if any) replaced
  // in every histogram holding it by the inverse-variance weighted mean of all those
  // histograms' margins (`variances`: each histogram's noise variance per count), the
  // difference spread evenly over the cells of each run, (c) each histogram projected
  // onto the non-negative counts of sum `total` (ProjectToTotal). Free in privacy.
  std::vector<torch::Tensor> ConsistentCounts(std::vector<torch::Tensor> counts,
                                              const std::vector<double>& variances, double total,
                                              int rounds) const;

  // The same blocks with the probabilities of a saved target (probabilities() of one
  // built for the same blocks): each block's part must be a probability vector.
  absl::StatusOr<MarginalTarget> WithProbabilities(const torch::Tensor& probabilities) const;

  // The target FromTable builds for `blocks` and `options`, with the probabilities of a
  // release received from its party (checked as by WithProbabilities).
  static absl::StatusOr<MarginalTarget> FromRelease(const std::vector<OutputBlock>& blocks,
                                                    const MarginalOptions& options,
                                                    const torch::Tensor& probabilities);
  // The values such a release holds (0 for options FromTable refuses).
  static int64_t ReleaseCells(const std::vector<OutputBlock>& blocks,
                              const MarginalOptions& options);

  // The exact histograms of `table` (rows in the blocks' encoding), normalised, in
  // probabilities()' order: what an exact release of that table would hold.
  torch::Tensor TableProbabilities(const torch::Tensor& table) const;
  // The same histograms as counts (float64, not normalised): they add over row chunks.
  torch::Tensor TableCounts(const torch::Tensor& table) const;

  // Σ over histograms of KL(target || batch) + reverse_weight · KL(batch' || target'),
  // where batch is the histogram over the batch (the batch mean of the relaxed one-hot
  // rows, of their outer products for a pair, with the position spread over its parts by
  // a sigmoid soft assignment) and ' adds kReverseFloor to every cell and renormalises.
  // The forward KL's pull on a cell is its target's share, so it barely removes mass G
  // puts where the target has (nearly) none; the reverse term's push there grows with
  // log(batch / floor). 0 when every batch histogram matches its target; finite for any
  // softmax output.
  torch::Tensor Loss(const torch::Tensor& slice, double reverse_weight) const;
  // A ten-thousandth of the table: below the noise of every DP release here (a count's
  // noise is 18 of 26,049 Adult records at ε = 10), so it only keeps the log finite.
  static constexpr double kReverseFloor = 1e-4;

  // The histograms' probabilities, concatenated (float64): the blocks', then the pairs'
  // (row-major).
  const torch::Tensor& probabilities() const { return probabilities_; }
  int blocks() const { return static_cast<int>(blocks_.size()); }
  int pairs() const { return static_cast<int>(pairs_.size()); }
  using Pair = std::pair<int, int>;  // indices into the blocks
  const std::vector<OutputBlock>& one_hot_blocks() const { return blocks_; }
  const std::vector<Pair>& pair_blocks() const { return pairs_; }
  // False for a target of pairs only (FromPairProbabilities).
  bool has_one_way() const { return one_way_; }
  // Cells of every histogram, in probabilities()' order.
  std::vector<int64_t> HistogramSizes() const;

 private:
  MarginalTarget(std::vector<OutputBlock> blocks, std::vector<Pair> pairs, int position_bins,
                 torch::Tensor probabilities);
  // The histograms (no probabilities) a release for these one-hot blocks holds.
  static MarginalTarget ShapeOf(const std::vector<OutputBlock>& one_hot,
                                const MarginalOptions& options);
  // Cells of a block's histogram.
  int64_t Cells(const OutputBlock& block) const;
  // Per row, the block's cell (hard: real rows) or cell probabilities (soft: G's rows).
  torch::Tensor HardCells(const torch::Tensor& table, const OutputBlock& block) const;
  torch::Tensor SoftCells(const torch::Tensor& slice, const OutputBlock& block) const;
  // Every histogram's counts (hard) or batch mean (soft), in probabilities_' order.
  std::vector<torch::Tensor> Histograms(const torch::Tensor& rows, bool hard) const;

  // A block's columns as its 2-way tables see them (its merge map, if it has one).
  torch::Tensor PairColumns(const torch::Tensor& rows, int block, bool hard,
                            bool unmerged = false) const;
  int64_t PairWidth(int block, bool unmerged = false) const;
  bool Unmerged(size_t pair) const { return pair < unmerged_.size() && unmerged_[pair]; }
  // cells x groups 0/1 map of a block's cells in a histogram (1-way: refined cells; pair
  // side: its pair columns) to the block's coarsest common resolution.
  torch::Tensor CommonMap(int block, int kind) const;  // kind 0: 1-way, 1: pair, 2: unmerged pair

  std::vector<OutputBlock> blocks_;  // one-hot blocks only
  std::vector<Pair> pairs_;
  // Per block, undefined or the width x groups 0/1 map that merges its bins in 2-way tables.
  std::vector<torch::Tensor> pair_maps_;
  std::vector<bool> unmerged_;  // per pair: both blocks at full width
  int position_bins_;    // 1: no refinement
  bool one_way_ = true;  // false: pair histograms only
  torch::Tensor probabilities_;
};

// The nearest vector (in L2) to `counts` that is non-negative and sums to `total`: counts
// shifted down by one constant and clipped at 0 (Euclidean projection onto the scaled
// simplex). On a noised histogram this zeroes cells whose count is noise only, which
// clipping alone would turn into a positive bias; exact counts summing to `total` are
// left as they are. total > 0; float64.
torch::Tensor ProjectToTotal(const torch::Tensor& counts, double total);

// The L2 sensitivity of a release of `histograms` count histograms under replace-one: a
// record moves one count down and one up in each, √(2m). Its Gaussian's std per count is
// the noise multiplier times this.
double HistogramReleaseSensitivity(int64_t histograms);

// The cell of each of a block's slots in its 2-way tables when its `bins` leading slots
// (the rest: missing) are merged into at most `groups` runs of consecutive bins of
// near-equal length: the runs, then the missing slots. groups >= 1.
std::vector<int> PairGroups(int width, int bins, int groups);

// The one-hot blocks of an encoding, in order.
std::vector<OutputBlock> OneHotBlocks(const std::vector<OutputBlock>& blocks);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_MARGINAL_TARGET_H_
