#ifndef VFSYNTH_COMMON_NN_MLP_GRADIENT_PENALTY_H_
#define VFSYNTH_COMMON_NN_MLP_GRADIENT_PENALTY_H_

#include <torch/torch.h>

#include <vector>

#include "absl/status/statusor.h"
#include "common/nn/mlp_critic.h"

namespace vfsynth {

// The WGAN-GP penalty of an MLP critic D = stage_n ∘ ... ∘ stage_1 (mlp_critic.h): the
// value of GradientPenalty (wgan.h), mean over rows of (‖grad_x D(x̂)‖₂ - 1)² at
// x̂ = alpha * real + (1 - alpha) * fake, alpha [B, 1]. grad_x D is computed by an
// explicit backward pass and the backward of the result gives the Linear weights'
// gradients in closed form (one outer-product sum per layer), instead of a
// create_graph graph and a double backward: at the batch sizes and widths used here
// that is mostly LibTorch dispatch and autograd overhead.
//
// Gradients, as autograd's double backward gives them: the weights' exactly (up to
// float rounding); zeros for real, fake and alpha when they require grad (LeakyReLU's
// derivative is piecewise constant); none for the biases (also zero: their .grad is
// left as it is). The stages must stay unchanged until the backward pass.
//
// Errors: InvalidArgument for stages that are not an MLP critic or inputs of the
// wrong shape; Internal for a LibTorch failure.
absl::StatusOr<torch::Tensor> MlpGradientPenalty(const std::vector<CriticStage>& stages,
                                                 const torch::Tensor& real,
                                                 const torch::Tensor& fake,
                                                 const torch::Tensor& alpha);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_MLP_GRADIENT_PENALTY_H_
