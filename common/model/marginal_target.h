#ifndef VFSYNTH_COMMON_MODEL_MARGINAL_TARGET_H_
#define VFSYNTH_COMMON_MODEL_MARGINAL_TARGET_H_

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/encoder.h"

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
class MarginalTarget {
 public:
  // Histograms of `table`'s one-hot blocks, normalised. With `noise` (a DP mode), each
  // count first gets N(0, (z·√(2m))²) noise for m blocks: under replace-one, a record
  // moves one count down and one up in every histogram, an L2 change of √(2m). Negative
  // noisy counts become 0; a block whose counts all vanish becomes uniform.
  // The caller charges the release (run_accounting.h, MarginalReleaseCharge) first.
  static absl::StatusOr<MarginalTarget> FromTable(const torch::Tensor& table,
                                                  const std::vector<OutputBlock>& blocks,
                                                  int position_bins, double noise_multiplier,
                                                  std::optional<at::Generator> noise);

  // The same blocks with the probabilities of a saved target (probabilities() of one
  // built for the same blocks): each block's part must be a probability vector.
  absl::StatusOr<MarginalTarget> WithProbabilities(const torch::Tensor& probabilities) const;

  // Σ over blocks of KL(target || the block's histogram over the batch): the batch mean
  // of the relaxed one-hot rows, with the position spread over its parts by a sigmoid
  // soft assignment. 0 when every batch histogram matches its target; finite for any
  // softmax output.
  torch::Tensor Loss(const torch::Tensor& slice) const;

  // The blocks' probabilities, concatenated (float64).
  const torch::Tensor& probabilities() const { return probabilities_; }
  int blocks() const { return static_cast<int>(blocks_.size()); }

 private:
  MarginalTarget(std::vector<OutputBlock> blocks, int position_bins, torch::Tensor probabilities);
  // Cells of a block's histogram.
  int64_t Cells(const OutputBlock& block) const;
  // Per row, the block's cell (hard: real rows) or cell probabilities (soft: G's rows).
  torch::Tensor HardCells(const torch::Tensor& table, const OutputBlock& block) const;
  torch::Tensor SoftCells(const torch::Tensor& slice, const OutputBlock& block) const;

  std::vector<OutputBlock> blocks_;  // one-hot blocks only
  int position_bins_;                // 1: no refinement
  torch::Tensor probabilities_;
};

// The one-hot blocks of an encoding, in order.
std::vector<OutputBlock> OneHotBlocks(const std::vector<OutputBlock>& blocks);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_MODEL_MARGINAL_TARGET_H_
