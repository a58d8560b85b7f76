#include "common/gan/shard_critics.h"

#include <cmath>

#include "common/random/random_tensors.h"

namespace vfsynth {
namespace {

torch::Tensor Uniform(std::vector<int64_t> shape, double bound, SecureRandom& stream) {
  return (UniformTensor(stream, shape, torch::kFloat32) * 2.0 - 1.0) * bound;
}

}  // namespace

ShardCritics::ShardCritics(const Options& options, SecureRandom& init) : options_(options) {
  const int64_t e = options.shards, d = options.width, h = options.hidden;
  const double bound1 = 1.0 / std::sqrt(static_cast<double>(d));
  const double bound2 = 1.0 / std::sqrt(static_cast<double>(h));
  w1_ = Uniform({e, d, h}, bound1, init).requires_grad_(true);
  b1_ = Uniform({e, 1, h}, bound1, init).requires_grad_(true);
  w2_ = Uniform({e, h, 1}, bound2, init).requires_grad_(true);
  b2_ = Uniform({e, 1, 1}, bound2, init).requires_grad_(true);
  optimizer_ = std::make_unique<torch::optim::Adam>(
      std::vector<torch::Tensor>{w1_, b1_, w2_, b2_},
      torch::optim::AdamOptions(options.lr).betas({options.beta1, options.beta2}));
}

torch::Tensor ShardCritics::Forward(const torch::Tensor& x, const torch::Tensor& w1,
                                    const torch::Tensor& b1, const torch::Tensor& w2,
                                    const torch::Tensor& b2) const {
  const torch::Tensor hidden = torch::leaky_relu(torch::baddbmm(b1, x, w1), options_.leaky_slope);
  return torch::baddbmm(b2, hidden, w2).squeeze(-1);
}

torch::Tensor ShardCritics::Scores(const torch::Tensor& x) const {
  return Forward(x, w1_, b1_, w2_, b2_);
}

torch::Tensor ShardCritics::SelectedScores(const torch::Tensor& x,
                                           const torch::Tensor& shard) const {
  // Row i becomes a batch of one for its own critic's gathered weights.
  return Forward(x.unsqueeze(1), w1_.index_select(0, shard), b1_.index_select(0, shard),
                 w2_.index_select(0, shard), b2_.index_select(0, shard))
      .squeeze(-1);
}

double ShardCritics::Step(const torch::Tensor& real, const torch::Tensor& fake,
                          const torch::Tensor& alpha, double gp_lambda) {
  torch::Tensor interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(true);
  const torch::Tensor grad =
      torch::autograd::grad({Scores(interpolates).sum()}, {interpolates}, /*grad_outputs=*/{},
                            /*retain_graph=*/true, /*create_graph=*/true)[0];
  const torch::Tensor penalty = (grad.norm(2, -1) - 1).pow(2).mean(1);  // [E]
  const torch::Tensor loss = Scores(fake).mean(1) - Scores(real).mean(1) + gp_lambda * penalty;
  optimizer_->zero_grad();
  // Summing over critics gives each critic exactly the gradient of its own loss.
  loss.sum().backward();
  optimizer_->step();
  return loss.mean().item<double>();
}

torch::Tensor ShardCritics::GeneratorLossGradients(const torch::Tensor& x) const {
  torch::Tensor leaf =
      x.detach().unsqueeze(0).expand({options_.shards, x.size(0), x.size(1)}).clone();
  leaf.requires_grad_(true);
  // Rows do not interact (no normalisation layer), so the gradient of the sum is per row.
  return torch::autograd::grad({-Scores(leaf).sum()}, {leaf})[0];
}

torch::Tensor ShardCritics::SelectedGeneratorLossGradients(const torch::Tensor& x,
                                                           const torch::Tensor& shard) const {
  torch::Tensor leaf = x.detach().clone().requires_grad_(true);
  return torch::autograd::grad({-SelectedScores(leaf, shard).sum()}, {leaf})[0];
}

std::vector<torch::Tensor> AssignShards(int64_t rows, int shards, SecureRandom& stream) {
  const torch::Tensor order = RandomPermutation(stream, rows);
  std::vector<torch::Tensor> result;
  int64_t start = 0;
  for (int e = 0; e < shards; ++e) {
    const int64_t size = rows / shards + (e < rows % shards ? 1 : 0);
    result.push_back(order.narrow(0, start, size));
    start += size;
  }
  return result;
}

torch::Tensor SampleShardBatches(const std::vector<torch::Tensor>& shards, int64_t per_shard,
                                 SecureRandom& stream) {
  std::vector<torch::Tensor> batches;
  for (const torch::Tensor& shard : shards) {
    batches.push_back(
        shard.index_select(0, SampleWithoutReplacement(shard.size(0), per_shard, stream)));
  }
  return torch::stack(batches);
}

}  // namespace vfsynth
