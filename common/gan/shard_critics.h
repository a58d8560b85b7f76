#ifndef VFSYNTH_COMMON_GAN_SHARD_CRITICS_H_
#define VFSYNTH_COMMON_GAN_SHARD_CRITICS_H_

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "common/random/secure_random.h"

namespace vfsynth {

// E small WGAN-GP critics d -> hidden -> 1 (LeakyReLU), one per disjoint shard of a
// party's rows (the gswgan and pate modes). They are held as stacked parameters
// ([E, d, h], ...) so that all critics train and score in one batched op: on 2 cores,
// E separate modules would cost E times the dispatch overhead. Critic e only ever
// sees its own shard's real rows: that is what the privacy argument rests on.
class ShardCritics {
 public:
  struct Options {
    int shards = 1;
    int width = 1;  // d: the party's encoded width
    int hidden = 64;
    double leaky_slope = 0.2;
    double lr = 2e-4;
    double beta1 = 0.5;
    double beta2 = 0.9;
  };
  // Parameters are drawn from `init` (data-independent), as nn::Linear does.
  ShardCritics(const Options& options, SecureRandom& init);

  int shards() const { return options_.shards; }

  // x [E, n, d] -> [E, n]: critic e scores x[e].
  torch::Tensor Scores(const torch::Tensor& x) const;
  // x [n, d], shard [n] (kLong) -> [n]: row i scored by critic shard[i].
  torch::Tensor SelectedScores(const torch::Tensor& x, const torch::Tensor& shard) const;

  // One Adam step of every critic on its WGAN-GP loss: real, fake [E, b, d] (critic e
  // trains on real[e] vs fake[e]), alpha [E, b, 1]. Returns the loss averaged over critics.
  double Step(const torch::Tensor& real, const torch::Tensor& fake, const torch::Tensor& alpha,
              double gp_lambda);

  // Gradient of the generator loss -D_e(x_i) with respect to x_i, for every critic e
  // and row i: x [n, d] -> [E, n, d].
  torch::Tensor GeneratorLossGradients(const torch::Tensor& x) const;
  // The same for critic shard[i] only: x [n, d], shard [n] -> [n, d].
  torch::Tensor SelectedGeneratorLossGradients(const torch::Tensor& x,
                                               const torch::Tensor& shard) const;

 private:
  torch::Tensor Forward(const torch::Tensor& x, const torch::Tensor& w1, const torch::Tensor& b1,
                        const torch::Tensor& w2, const torch::Tensor& b2) const;

  Options options_;
  torch::Tensor w1_, b1_, w2_, b2_;  // [E, d, h], [E, 1, h], [E, h, 1], [E, 1, 1]
  std::unique_ptr<torch::optim::Adam> optimizer_;
};

// Splits rows 0..rows-1 into `shards` disjoint shards of sizes differing by at most
// one, by a permutation drawn from `stream`. Returns one index tensor (kLong) per shard.
std::vector<torch::Tensor> AssignShards(int64_t rows, int shards, SecureRandom& stream);

// `per_shard` row indices drawn without replacement inside each shard: [E, per_shard].
torch::Tensor SampleShardBatches(const std::vector<torch::Tensor>& shards, int64_t per_shard,
                                 SecureRandom& stream);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_SHARD_CRITICS_H_
