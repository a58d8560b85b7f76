#ifndef VFSYNTH_COMMON_NN_WGAN_H_
#define VFSYNTH_COMMON_NN_WGAN_H_

#include <torch/torch.h>

#include <functional>

namespace vfsynth {

using CriticFn = std::function<torch::Tensor(const torch::Tensor&)>;

// WGAN critic loss: mean D(fake) - mean D(real).
torch::Tensor CriticLoss(const torch::Tensor& score_real, const torch::Tensor& score_fake);

// WGAN-GP penalty (Gulrajani et al. 2017): mean over rows of (||grad_x D(x_hat)||_2 - 1)^2
// at x_hat = alpha * real + (1 - alpha) * fake, alpha of shape (B, 1). Built with
// create_graph so the penalty can be differentiated with respect to the critic's
// parameters and to `real` / `fake` themselves. Works for any critic function; the
// trainers use MlpGradientPenalty (mlp_gradient_penalty.h), the same value for MLP
// critics with closed-form gradients, and this is the autograd reference its tests and
// vfsynth-gp-bench compare against.
torch::Tensor GradientPenalty(const CriticFn& critic, const torch::Tensor& real,
                              const torch::Tensor& fake, const torch::Tensor& alpha);

// `x` unchanged in the forward pass; its gradient is multiplied by `weight` in the
// backward pass. The reference trainer weights the shared critic's influence on the
// feature nets and G this way, exactly as the curator scales the gradients it sends.
torch::Tensor ScaleGradient(const torch::Tensor& x, double weight);

// PacGAN packing (model.experimental.pack): (B, W) -> (B / pack, pack * W), packed row i being rows
// i*pack .. i*pack + pack - 1 side by side. Differentiable (a reshape), so gradients
// reach the unpacked rows in their own shape. The curator and the reference trainer
// both pack D_s's input with this. B must be a multiple of pack (config.cc checks).
torch::Tensor PackRows(const torch::Tensor& rows, int64_t pack);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_WGAN_H_
