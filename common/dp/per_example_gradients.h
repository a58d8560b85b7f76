#ifndef VFSYNTH_COMMON_DP_PER_EXAMPLE_GRADIENTS_H_
#define VFSYNTH_COMMON_DP_PER_EXAMPLE_GRADIENTS_H_

#include <torch/torch.h>

#include <vector>

#include "absl/status/statusor.h"
#include "common/nn/mlp_critic.h"

namespace vfsynth {

// Exact per-example gradients of a WGAN-GP critic loss (LibTorch 1.13 has no vmap).
//
// The critic is D = stage_n ∘ ... ∘ stage_1, an MLP critic as in common/nn/mlp_critic.h
// (which also parses it and holds the penalty's chain math). Any other module type is
// an InvalidArgument error.
//
// Method: explicit forward and backward passes over the batch, with the gradients kept
// as sums of outer products. Example i's gradient of a Linear weight W is
//   δ(r_i) ⊗ a(r_i) + δ(f_i) ⊗ a(f_i) + u(x̂_i) ⊗ ρ(x̂_i):
// the first-order terms (δ: gradient at the layer's output, a: its input) and the
// penalty's, which reaches W only through the backward chain grad_x D(x̂) = u_1 W_1
// (LeakyReLU's derivative is piecewise constant, so the activations' dependence on W
// contributes nothing; u: ∂D/∂(layer output) at x̂, ρ: ∂GP/∂(u W)). A bias gets
// δ(r_i) + δ(f_i). Exact (the same values as autograd's double backward, up to float
// rounding), about three batched forward passes of work, and norms and clipped sums
// can be taken without ever forming the [B, out, in] tensors (FactoredSquaredNorms,
// FactoredWeightedSum; dp_sgd.h uses them).
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
  // True when nothing on the fake rows' side depends on a private record: f_i are
  // synthetic, the stages' parameters are already sanitised and upstream_fake (if any)
  // is post-processing of released data. CriticFactoredGradients then marks those terms
  // (FactoredGradient::synthetic) so that DP-SGD clips them apart from the real-row terms
  // and leaves them out of the sensitivity (dp_sgd.h). Set it only when that holds: it
  // does not in a party's dpsgd step, whose upstream_fake carries D_s's penalty on the
  // curator's clean real features.
  bool fake_terms_public = false;
};

struct PerExampleGradientOptions {
  // Also return ∂ℓ_i/∂r_i and ∂ℓ_i/∂f_i (what the curator sends down, times B).
  bool input_gradients = false;
};

// For each example i:
//   ℓ_i = D(f_i) - D(r_i) + λ·(‖∇_x D(x̂_i)‖₂ - 1)² [+ <g_r[i], stage_1(r_i)> + <g_f[i],
//   stage_1(f_i)>].
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

// A parameter's per-example gradients, factored: example i's gradient is
// Σ_m left[m][i] ⊗ right[m][i] for a Linear weight ([out, in]; left[m] is [B, out],
// right[m] is [B, in]), or Σ_m left[m][i] for a bias (right empty).
struct FactoredGradient {
  std::vector<torch::Tensor> left;
  std::vector<torch::Tensor> right;
  // Empty, or one flag per term: true for a term that depends on the fake rows only
  // (CriticExamples::fake_terms_public); the other terms involve a real row.
  std::vector<bool> synthetic;
};

struct FactoredPerExampleGradients {
  std::vector<FactoredGradient> grads;  // CriticParameters(stages) order
  torch::Tensor loss;                   // [B]: ℓ_i
  torch::Tensor input_grad_real;        // [B, d_in], only if options.input_gradients
  torch::Tensor input_grad_fake;
};

// The stages' parameters in the order used by PerExampleGradients::grads (each stage's
// parameters() order, stage after stage). Fails like CriticPerExampleGradients on a bad stage.
absl::StatusOr<std::vector<torch::Tensor>> CriticParameters(const std::vector<CriticStage>& stages);

// Computes the per-example gradients above, materialised (B times the parameters'
// memory; DP-SGD uses the factored form instead). Does not touch the parameters or
// their .grad(); needs no grad mode. Errors: InvalidArgument for an
// unsupported stage, a non-scalar critic output, or mismatched shapes; Internal for a
// LibTorch failure.
absl::StatusOr<PerExampleGradients> CriticPerExampleGradients(
    const std::vector<CriticStage>& stages, const CriticExamples& examples,
    const PerExampleGradientOptions& options = {});

// The same gradients, factored (see the top of this file). Same errors.
absl::StatusOr<FactoredPerExampleGradients> CriticFactoredGradients(
    const std::vector<CriticStage>& stages, const CriticExamples& examples,
    const PerExampleGradientOptions& options = {});

// The terms of each gradient whose `synthetic` flag equals `synthetic` (an unflagged
// gradient's terms all count as not synthetic).
std::vector<FactoredGradient> SelectTerms(const std::vector<FactoredGradient>& gradients,
                                          bool synthetic);

// [B, param shape...]: the per-example gradients written out.
torch::Tensor Materialize(const FactoredGradient& gradient);
// [B] (double): each example's squared L2 norm over all the given parameters jointly.
torch::Tensor FactoredSquaredNorms(const std::vector<FactoredGradient>& gradients);
// Σ_i weights[i] · g_i (parameter shape, the factors' dtype); examples of weight 0 are
// left out entirely (even if their gradient is not finite).
torch::Tensor FactoredWeightedSum(const FactoredGradient& gradient, const torch::Tensor& weights);

// [B, P]: each example's gradient over all parameters, concatenated in parameter order.
torch::Tensor FlattenPerExample(const std::vector<torch::Tensor>& per_example);

// [B]: each example's L2 norm over all parameters jointly (computed in double).
torch::Tensor PerExampleNorms(const std::vector<torch::Tensor>& per_example);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DP_PER_EXAMPLE_GRADIENTS_H_
