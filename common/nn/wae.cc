#include "common/nn/wae.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/nn/wae_size.h"

namespace vfsynth {

WaeImpl::WaeImpl(const WaeOptions& options) : options_(options) {
  encoder_ = register_module(
      "encoder",
      torch::nn::Sequential(torch::nn::Linear(options.input_dim, options.hidden), torch::nn::ReLU(),
                            torch::nn::Linear(options.hidden, options.latent)));
  decoder_ = register_module(
      "decoder",
      torch::nn::Sequential(torch::nn::Linear(options.latent, options.hidden), torch::nn::ReLU(),
                            torch::nn::Linear(options.hidden, options.input_dim)));
}

torch::Tensor WaeImpl::Encode(const torch::Tensor& x) { return encoder_->forward(x); }

torch::Tensor WaeImpl::DecodeLogits(const torch::Tensor& z) { return decoder_->forward(z); }

torch::Tensor ImqMmd(const torch::Tensor& q, const torch::Tensor& p, double kappa) {
  return BatchedImqMmd(q.unsqueeze(0), p.unsqueeze(0), kappa).squeeze(0);
}

torch::Tensor BatchedImqMmd(const torch::Tensor& q, const torch::Tensor& p, double kappa) {
  auto kernel = [kappa](const torch::Tensor& a, const torch::Tensor& b) {
    // ||a_i − b_j||² without cdist's square root (whose gradient is undefined at 0).
    const torch::Tensor squared = (a.unsqueeze(2) - b.unsqueeze(1)).pow(2).sum(-1);
    return kappa / (kappa + squared);
  };
  // One sample has no pairs: its within term is 0 (a one-row user's update is then
  // reconstruction plus the pull of its code towards the prior sample).
  auto off_diagonal_mean = [](const torch::Tensor& k) {
    const int64_t n = k.size(1);
    if (n < 2) return torch::zeros({k.size(0)}, k.options());
    return (k.sum({1, 2}) - k.diagonal(0, 1, 2).sum(-1)) / static_cast<double>(n * (n - 1));
  };
  const double pairs = static_cast<double>(q.size(1) * p.size(1));
  return off_diagonal_mean(kernel(p, p)) + off_diagonal_mean(kernel(q, q)) -
         2.0 * kernel(p, q).sum({1, 2}) / pairs;
}

torch::Tensor WaeLoss(Wae& model, const torch::Tensor& x, const torch::Tensor& prior,
                      double lambda) {
  const torch::Tensor codes = model->Encode(x);
  const torch::Tensor reconstruction =
      torch::binary_cross_entropy_with_logits(model->DecodeLogits(codes), x);
  return reconstruction + lambda * ImqMmd(codes, prior, 2.0 * static_cast<double>(model->latent()));
}

int64_t WaeParameterCount(const WaeOptions& options) {
  return WaeParameterCountOf(options.input_dim, options.hidden, options.latent);
}

torch::Tensor FlatParameters(torch::nn::Module& module) {
  std::vector<torch::Tensor> pieces;
  for (const torch::Tensor& parameter : module.parameters())
    pieces.push_back(parameter.detach().reshape({-1}));
  return torch::cat(pieces);
}

absl::Status AssignFlatParameters(torch::nn::Module& module, const torch::Tensor& flat) {
  std::vector<torch::Tensor> parameters = module.parameters();
  int64_t total = 0;
  for (const torch::Tensor& parameter : parameters) total += parameter.numel();
  if (flat.dim() != 1 || flat.numel() != total) {
    return absl::InvalidArgumentError(absl::StrCat("a flat parameter vector of ", flat.numel(),
                                                   " values for ", total, " parameters"));
  }
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (torch::Tensor& parameter : parameters) {
    parameter.copy_(flat.slice(0, offset, offset + parameter.numel()).view_as(parameter));
    offset += parameter.numel();
  }
  return absl::OkStatus();
}

}  // namespace vfsynth
