#include "common/nn/mlp_gradient_penalty.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Forward inputs after ctx: critic (not a tensor), real, fake, alpha, weights...
// Backward returns one entry per input; the tensors' indices among the node's edges
// (needs_input_grad) skip the critic.
constexpr size_t kRealEdge = 0, kFakeEdge = 1, kAlphaEdge = 2;

struct MlpGradientPenaltyFunction : public torch::autograd::Function<MlpGradientPenaltyFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const MlpCritic& critic,
                               const torch::Tensor& real, const torch::Tensor& fake,
                               const torch::Tensor& alpha, at::TensorList weights) {
    const torch::Tensor x_hat = alpha * real + (1 - alpha) * fake;
    const int64_t b = x_hat.size(0);
    // The last layer's output (the scores) is not needed, only its gradient, which is 1.
    const std::vector<ChainLayer> chain =
        ChainAt(critic, LayerInputs(critic, x_hat, nullptr), 0, b);
    std::vector<torch::Tensor> u;
    const torch::Tensor grad_x = ScoreInputGradient(chain, b, &u);
    torch::Tensor rho;  // ∂(mean penalty)/∂grad_x
    const torch::Tensor penalty = PenaltyRows(grad_x, 1.0 / static_cast<double>(b), &rho).mean();

    // What the backward pass needs to push rho through the chain: the weights (saved
    // variables, so an in-place change before backward is an error), the masks and u.
    std::vector<int64_t> is_linear;
    std::vector<double> slopes;
    std::vector<torch::Tensor> masks, linear_u;
    for (size_t l = 0; l < chain.size(); ++l) {
      is_linear.push_back(chain[l].weight.defined() ? 1 : 0);
      if (chain[l].weight.defined()) {
        linear_u.push_back(u[l]);
      } else {
        masks.push_back(chain[l].leaky_input);
        slopes.push_back(chain[l].slope);
      }
    }
    ctx->save_for_backward(weights.vec());
    ctx->saved_data["is_linear"] = std::move(is_linear);
    ctx->saved_data["slopes"] = std::move(slopes);
    ctx->saved_data["masks"] = std::move(masks);
    ctx->saved_data["u"] = std::move(linear_u);
    ctx->saved_data["rho"] = rho;
    ctx->saved_data["input_sizes"] = real.sizes().vec();
    ctx->saved_data["alpha_sizes"] = alpha.sizes().vec();
    return penalty;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list weights = ctx->get_saved_variables();
    const std::vector<int64_t> is_linear = ctx->saved_data["is_linear"].toIntVector();
    const std::vector<double> slopes = ctx->saved_data["slopes"].toDoubleVector();
    const std::vector<torch::Tensor> masks = ctx->saved_data["masks"].toTensorVector();
    const std::vector<torch::Tensor> u = ctx->saved_data["u"].toTensorVector();
    const torch::Tensor rho = ctx->saved_data["rho"].toTensor();

    std::vector<ChainLayer> chain(is_linear.size());
    size_t w = 0, m = 0;
    for (size_t l = 0; l < chain.size(); ++l) {
      if (is_linear[l] != 0) {
        chain[l].weight = weights[w++];
      } else {
        chain[l].leaky_input = masks[m];
        chain[l].slope = slopes[m++];
      }
    }
    const std::vector<torch::Tensor> factors = PenaltyWeightFactors(chain, rho * grad_outputs[0]);

    variable_list grads = {torch::Tensor()};  // the critic
    const auto zeros = [&](const char* sizes) {
      return torch::zeros(ctx->saved_data[sizes].toIntVector(), rho.options());
    };
    grads.push_back(ctx->needs_input_grad(kRealEdge) ? zeros("input_sizes") : torch::Tensor());
    grads.push_back(ctx->needs_input_grad(kFakeEdge) ? zeros("input_sizes") : torch::Tensor());
    grads.push_back(ctx->needs_input_grad(kAlphaEdge) ? zeros("alpha_sizes") : torch::Tensor());
    // ∂P/∂W_l = Σ_i u_l[i] ⊗ ρ_l[i].
    size_t k = 0;
    for (size_t l = 0; l < chain.size(); ++l) {
      if (is_linear[l] != 0) grads.push_back(u[k++].t().mm(factors[l]));
    }
    return grads;
  }
};

}  // namespace

absl::StatusOr<torch::Tensor> MlpGradientPenalty(const std::vector<CriticStage>& stages,
                                                 const torch::Tensor& real,
                                                 const torch::Tensor& fake,
                                                 const torch::Tensor& alpha) {
  absl::StatusOr<MlpCritic> critic = ParseMlpCritic(stages);
  if (!critic.ok()) return critic.status();
  if (absl::Status status = CheckCriticBatch(*critic, real, fake, alpha); !status.ok())
    return status;
  std::vector<torch::Tensor> weights;
  for (const MlpLayer& layer : critic->layers) {
    if (layer.linear != nullptr) weights.push_back(layer.linear->weight);
  }
  try {
    return MlpGradientPenaltyFunction::apply(*critic, real, fake, alpha, at::TensorList(weights));
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("gradient penalty: ", e.what_without_backtrace()));
  }
}

}  // namespace vfsynth
