#ifndef VFSYNTH_COMMON_PRIVACY_PER_EXAMPLE_GRADIENTS_H_
#define VFSYNTH_COMMON_PRIVACY_PER_EXAMPLE_GRADIENTS_H_

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace vfsynth {

// Exact per-example gradients of a WGAN-GP critic loss (LibTorch 1.13 has no vmap).
//
// The critic is D = stage_n ∘ ... ∘ stage_1. A stage is a torch::nn::Sequential of
// torch::nn::Linear and torch::nn::LeakyReLU modules, or a module whose only child is
// such a Sequential and which owns no other parameters (FeatureNetImpl, ScoreNetImpl
// from common/model/networks.h). Any other module type is an InvalidArgument error.
//
// Method: per-sample parameter replication. Each Linear weight W [out, in] becomes a
// leaf W_rep [B, out, in] (a stride-0 expand, so no copy), every row is pushed through
// its own replica with bmm/baddbmm, the gradient penalty's input gradient is taken with
// create_graph, and one backward of Σ_i ℓ_i with respect to the replicas yields ∂ℓ_i/∂θ
// in row i. Exact, including the penalty's double backward.
using CriticStage = std::shared_ptr<torch::nn::Module>;

// One critic batch. All tensors are on the CPU with the parameters' dtype.
struct CriticExamples {
  torch::Tensor real;   // [B, d_in]: r_i
  torch::Tensor fake;   // [B, d_in]: f_i
  torch::Tensor alpha;  // [B, 1]:    x̂_i = α_i r_i + (1 - α_i) f_i
  double gp_lambda = 10.0;
  // Optional [B, d_1] (d_1 = output width of the FIRST stage): adds the terms
  // <g_r[i], stage_1(r_i)> + <g_f[i], stage_1(f_i)> to ℓ_i. These are per-EXAMPLE upstream
  // gradients. The curator's dL_s/dh of its *mean* loss is (1/B)·∂ℓ^s_i/∂h_i, so a party
  // passes B · grad_real (and B · grad_fake) here; see PerExampleGradients below.
  torch::Tensor upstream_real;
  torch::Tensor upstream_fake;
};

struct PerExampleGradientOptions {
  // Also return ∂ℓ_i/∂r_i and ∂ℓ_i/∂f_i (what the curator sends down, times B).
  bool input_gradients = false;
};

// For each example i:
//   ℓ_i = D(f_i) - D(r_i) + λ·(‖∇_x D(x̂_i)‖₂ - 1)² [+ <g_r[i], stage_1(r_i)> + <g_f[i], stage_1(f_i)>].
// Nothing is divided by B here. The non-private trainer's batch loss is
//   mean_i D(f_i) - mean_i D(r_i) + λ·mean_i GP_i + Σ_i <grad_real[i], h_r[i]> + ...
// with grad_real = upstream_real / B, so (1/B)·Σ_i grads[p][i] is exactly its gradient.
struct PerExampleGradients {
  // One entry per parameter, in the order of CriticParameters(stages) (= the stages'
  // parameters() order); entry p has shape [B, param_p.sizes()...] and row i = ∂ℓ_i/∂θ_p.
  std::vector<torch::Tensor> grads;
  torch::Tensor loss;             // [B]: ℓ_i (detached).
  torch::Tensor input_grad_real;  // [B, d_in]: ∂ℓ_i/∂r_i, only if options.input_gradients.
  torch::Tensor input_grad_fake;  // [B, d_in]: ∂ℓ_i/∂f_i, only if options.input_gradients.
};

// The stages' parameters in the order used by PerExampleGradients::grads (each stage's
// parameters() order, stage after stage). Fails like CriticPerExampleGradients on a bad stage.
absl::StatusOr<std::vector<torch::Tensor>> CriticParameters(const std::vector<CriticStage>& stages);

// Computes the per-example gradients above. Does not touch the parameters or their .grad().
// Runs with grad mode enabled even under a NoGradGuard. Errors: InvalidArgument for an
// unsupported stage, a non-scalar critic output, or mismatched shapes; Internal for a
// LibTorch failure.
absl::StatusOr<PerExampleGradients> CriticPerExampleGradients(
    const std::vector<CriticStage>& stages, const CriticExamples& examples,
    const PerExampleGradientOptions& options = {});

// [B, P]: each example's gradient over all parameters, concatenated in parameter order.
torch::Tensor FlattenPerExample(const std::vector<torch::Tensor>& per_example);

// [B]: each example's L2 norm over all parameters jointly (computed in double).
torch::Tensor PerExampleNorms(const std::vector<torch::Tensor>& per_example);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PRIVACY_PER_EXAMPLE_GRADIENTS_H_
