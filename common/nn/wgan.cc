#include "common/nn/wgan.h"

namespace vfsynth {
namespace {

struct ScaleGradientFunction : public torch::autograd::Function<ScaleGradientFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               double weight) {
    ctx->saved_data["weight"] = weight;
    return x.clone();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    return {grad_outputs[0] * ctx->saved_data["weight"].toDouble(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor ScaleGradient(const torch::Tensor& x, double weight) {
  if (weight == 1.0) return x;
  return ScaleGradientFunction::apply(x, weight);
}

torch::Tensor PackRows(const torch::Tensor& rows, int64_t pack) {
  if (pack == 1) return rows;
  TORCH_CHECK(rows.dim() == 2 && pack > 1 && rows.size(0) % pack == 0, "PackRows: ", rows.size(0),
              " rows cannot be packed by ", pack);
  return rows.reshape({rows.size(0) / pack, pack * rows.size(1)});
}

torch::Tensor CriticLoss(const torch::Tensor& score_real, const torch::Tensor& score_fake) {
  return score_fake.mean() - score_real.mean();
}

torch::Tensor GradientPenalty(const CriticFn& critic, const torch::Tensor& real,
                              const torch::Tensor& fake, const torch::Tensor& alpha) {
  torch::Tensor interpolates = alpha * real + (1 - alpha) * fake;
  if (!interpolates.requires_grad()) interpolates.requires_grad_(true);
  const torch::Tensor scores = critic(interpolates);
  const torch::Tensor grad = torch::autograd::grad({scores.sum()}, {interpolates},
                                                   /*grad_outputs=*/{}, /*retain_graph=*/true,
                                                   /*create_graph=*/true)[0];
  return (grad.norm(2, 1) - 1).pow(2).mean();
}

}  // namespace vfsynth
