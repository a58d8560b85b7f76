#ifndef VFSYNTH_COMMON_NN_MLP_CRITIC_H_
#define VFSYNTH_COMMON_NN_MLP_CRITIC_H_

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vfsynth {

// An MLP critic read out of its modules, and the explicit passes over it that the
// analytic WGAN-GP code needs (per-example DP gradients, MlpGradientPenalty).
//
// The critic is D = stage_n ∘ ... ∘ stage_1. A stage is a torch::nn::Sequential of
// torch::nn::Linear and torch::nn::LeakyReLU modules, or a module whose only child is
// such a Sequential and which owns no other parameters (FeatureNetImpl, ScoreNetImpl
// from common/nn/networks.h).
//
// The penalty's math: LeakyReLU's derivative is piecewise constant, so
// grad_x D(x̂) = u_1 W_1 with u_l = ∂D/∂(output of Linear l) at x̂, a product of weights
// and fixed masks. A function P of grad_x D therefore reaches W_l only through that
// chain, and ∂P/∂W_l = u_l ⊗ ρ_l with ρ_l = ∂P/∂(u_l W_l), ρ pushed forward from
// ρ_1 = ∂P/∂(grad_x D). P's gradients with respect to the biases and to x̂ are zero
// (almost everywhere; autograd's double backward returns exactly zero too).
using CriticStage = std::shared_ptr<torch::nn::Module>;

// One layer of the critic.
struct MlpLayer {
  torch::nn::LinearImpl* linear = nullptr;  // Null for a LeakyReLU.
  double slope = 0.0;                       // LeakyReLU negative slope.
};

struct MlpCritic {
  std::vector<MlpLayer> layers;  // every stage's layers, stage after stage
  std::vector<size_t>
      stage_ends;  // stage k is layers [stage_ends[k - 1] (0 for k = 0), stage_ends[k])
  std::vector<torch::Tensor> params;  // each stage's parameters() order, stage after stage
};

// Reads the stages (they must outlive the result: it points into them). Checks that
// each stage's input width is the previous stage's output width and that the last
// stage outputs one score per row. Errors: InvalidArgument.
absl::StatusOr<MlpCritic> ParseMlpCritic(const std::vector<CriticStage>& stages);

int64_t InputWidth(const MlpCritic& critic);

// Checks one penalty batch against the critic: real [B, d_in] with B >= 1, fake of
// real's shape, alpha [B, 1]. Errors: InvalidArgument.
absl::Status CheckCriticBatch(const MlpCritic& critic, const torch::Tensor& real,
                              const torch::Tensor& fake, const torch::Tensor& alpha);
int64_t StageOutputWidth(const MlpCritic& critic, size_t stage);

// Forward pass over the rows of x: the input of every layer. Fills *output with the
// critic's output when given; without it the last layer is not evaluated.
std::vector<torch::Tensor> LayerInputs(const MlpCritic& critic, const torch::Tensor& x,
                                       torch::Tensor* output);

// One layer of the backward chain at a set of rows: a Linear's weight, or a
// LeakyReLU's input at those rows (its derivative's mask) and slope.
struct ChainLayer {
  torch::Tensor weight;
  torch::Tensor leaky_input;
  double slope = 0.0;
};

// The chain at rows [start, start + n) of a forward pass (`inputs` from LayerInputs).
std::vector<ChainLayer> ChainAt(const MlpCritic& critic, const std::vector<torch::Tensor>& inputs,
                                int64_t start, int64_t n);

// `grad` times LeakyReLU's derivative at `input`: LibTorch's own backward kernel.
torch::Tensor ThroughLeaky(const torch::Tensor& grad, const torch::Tensor& input, double slope);

// grad_x D at the chain's `rows` rows ([rows, d_in]); (*u)[l] = u_l for each Linear l
// (undefined for LeakyReLUs). The chain must start with a Linear (ParseMlpCritic's).
torch::Tensor ScoreInputGradient(const std::vector<ChainLayer>& chain, int64_t rows,
                                 std::vector<torch::Tensor>* u);

// Per row, (‖g‖₂ - 1)² ([n]); *rho = scale · ∂/∂g of it = scale · 2 (‖g‖ - 1) g / ‖g‖
// (0 at g = 0, as LibTorch's norm backward).
torch::Tensor PenaltyRows(const torch::Tensor& g, double scale, torch::Tensor* rho);

// ρ_l for each Linear l (undefined for LeakyReLUs), from ρ_1 = `rho`.
std::vector<torch::Tensor> PenaltyWeightFactors(const std::vector<ChainLayer>& chain,
                                                torch::Tensor rho);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_MLP_CRITIC_H_
