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
// histogram per block released once with the Gaussian mechanism is nearly exact for the
// same ε (docs/privacy.md, "Marginal release"). Scalar (tanh) columns have no target.
class MarginalTarget {
 public:
  // Histograms of `table`'s one-hot blocks, normalised. With `noise` (a DP mode), each
  // count first gets N(0, (z·√(2m))²) noise for m blocks: under replace-one, a record
  // moves one count down and one up in every block, an L2 change of √(2m). Negative
  // noisy counts become 0; a block whose counts all vanish becomes uniform.
  // The caller charges the release (run_accounting.h, MarginalReleaseCharge) first.
  static absl::StatusOr<MarginalTarget> FromTable(const torch::Tensor& table,
                                                  const std::vector<OutputBlock>& blocks,
                                                  double noise_multiplier,
                                                  std::optional<at::Generator> noise);
  // The same blocks with the probabilities of a saved target (probabilities() of one
  // built for the same blocks): each block's part must be a probability vector.
  absl::StatusOr<MarginalTarget> WithProbabilities(const torch::Tensor& probabilities) const;

  // Σ over blocks of KL(target || mean of `slice`'s block over the batch): 0 when every
  // block's batch mean matches its target; finite for any softmax output.
  torch::Tensor Loss(const torch::Tensor& slice) const;

  // The one-hot blocks' probabilities, concatenated (float64).
  const torch::Tensor& probabilities() const { return probabilities_; }
  int blocks() const { return static_cast<int>(blocks_.size()); }

 private:
  MarginalTarget(std::vector<OutputBlock> blocks, torch::Tensor probabilities);

  std::vector<OutputBlock> blocks_;  // one-hot blocks only
  torch::Tensor probabilities_;
};

// The one-hot blocks of an encoding, in order.
std::vector<OutputBlock> OneHotBlocks(const std::vector<OutputBlock>& blocks);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_MODEL_MARGINAL_TARGET_H_
