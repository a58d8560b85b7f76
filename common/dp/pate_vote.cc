#include "common/dp/pate_vote.h"

#include <algorithm>

#include "common/random/random_tensors.h"

namespace vfsynth {

torch::Tensor TopKStochasticSignVotes(const torch::Tensor& grads, int top_k, double clip,
                                      SecureRandom& rng) {
  torch::NoGradGuard no_grad;
  const int64_t k = std::min<int64_t>(top_k, grads.size(-1));
  const torch::Tensor top = std::get<1>(grads.abs().topk(k, -1));
  const torch::Tensor mask = torch::zeros_like(grads).scatter_(-1, top, 1.0);
  const torch::Tensor kept = grads.clamp(-clip, clip) * mask;
  // A row whose kept entries are all 0 votes uniformly random signs (v = 0).
  const torch::Tensor scale = kept.abs().amax(-1, /*keepdim=*/true).clamp_min(1e-30);
  const torch::Tensor plus_probability = (1.0 + kept / scale) / 2.0;
  const torch::Tensor u = UniformTensor(rng, grads.sizes(), grads.scalar_type());
  return torch::where(u < plus_probability, torch::ones_like(grads), -torch::ones_like(grads)) *
         mask;
}

torch::Tensor NoisyThresholdVote(const torch::Tensor& votes, double threshold, double sigma,
                                 SecureRandom& noise) {
  torch::NoGradGuard no_grad;
  const torch::Tensor sums = votes.sum(0);
  const torch::Tensor noisy = sums.to(torch::kDouble) + GaussianTensor(noise, sums.sizes(), sigma);
  return (noisy >= threshold).to(sums.scalar_type()) - (noisy <= -threshold).to(sums.scalar_type());
}

torch::Tensor BinVoteHistogram(const torch::Tensor& projected, double clip, int bins) {
  torch::NoGradGuard no_grad;
  const double width = 2.0 * clip / bins;
  const torch::Tensor index =
      ((projected.clamp(-clip, clip) + clip) / width).floor().clamp(0, bins - 1).to(torch::kLong);
  return torch::one_hot(index, bins).sum(0).to(projected.scalar_type());
}

torch::Tensor ConfidentGnmax(const torch::Tensor& counts, double threshold, double sigma_threshold,
                             double sigma_argmax, SecureRandom& noise) {
  torch::NoGradGuard no_grad;
  const torch::Tensor exact = counts.to(torch::kDouble);
  const torch::Tensor top = exact.amax(-1);
  const torch::Tensor confident =
      top + GaussianTensor(noise, top.sizes(), sigma_threshold) >= threshold;
  const torch::Tensor noisy = exact + GaussianTensor(noise, exact.sizes(), sigma_argmax);
  return torch::where(confident, noisy.argmax(-1), torch::full_like(top, -1, torch::kLong));
}

torch::Tensor BinMidpoints(const torch::Tensor& winners, double clip, int bins) {
  const double width = 2.0 * clip / bins;
  const torch::Tensor mid = -clip + (winners.to(torch::kFloat32) + 0.5) * width;
  return torch::where(winners >= 0, mid, torch::zeros_like(mid));
}

}  // namespace vfsynth
