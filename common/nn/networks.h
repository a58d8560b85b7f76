#ifndef VFSYNTH_COMMON_NN_NETWORKS_H_
#define VFSYNTH_COMMON_NN_NETWORKS_H_

#include <torch/torch.h>

#include <map>
#include <mutex>
#include <vector>

#include "common/base/stream_seed.h"
#include "common/data/encoder.h"
#include "common/random/secure_random.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// Global generator: z -> hidden stack -> logits over all encoded columns of all
// parties -> per-block output heads (softmax or Gumbel-softmax for one-hot blocks,
// tanh for scalars).
//
// With model.experimental.generator_towers "per_party", each party's columns come from a tower of
// their own (z -> hidden -> d_k, `tower_widths` gives the d_k in party order); the
// towers' logits are concatenated, so the output layout is the same. With
// model.experimental.generator_private_z p > 0 as well, z is [shared z_dim | p for tower 0 | p for
// tower 1 | ...] and tower k reads the shared block and its own.
class GeneratorImpl : public torch::nn::Module {
 public:
  GeneratorImpl(const v1::ModelConfig& config, std::vector<OutputBlock> blocks, int output_width,
                const std::vector<int>& tower_widths = {});

  // Training output: relaxed one-hot blocks. `gumbel` supplies the Gumbel noise in
  // "gumbel" mode (it is not used in "softmax" mode).
  torch::Tensor forward(const torch::Tensor& z, at::Generator gumbel);

  // Publication output: hard one-hot blocks (a category sampled per block by
  // Gumbel-max on the logits, divided by the block's entry in `temperature`, keyed by
  // block offset, if any) and tanh scalars; ready for TableEncoder::Decode.
  torch::Tensor SampleHard(const torch::Tensor& z, at::Generator gen,
                           const std::map<int, double>& temperature = {});

  // The pre-activation outputs: every block's logits, the scalars before tanh.
  torch::Tensor Logits(const torch::Tensor& z);

  int output_width() const { return output_width_; }

  // Width of the z that forward() and SampleHard() take: model.z_dim, plus
  // model.experimental.generator_private_z for each tower.
  int latent_width() const { return shared_z_ + private_z_ * static_cast<int>(bodies_.size()); }

  // Conditions the categorical block at encoded column `offset`
  // (model.experimental.conditioned_column) on the rest of the row: its logits gain a linear map
  // (registered as "condition", zero at the start) of the row's other outputs, which forward() and
  // SampleHard() draw first. Call once, right after construction.
  void ConditionBlock(int offset);

  // `rows` standard normal z of latent_width() columns, drawn from `gen`.
  torch::Tensor SampleLatent(int64_t rows, at::Generator gen) const {
    return torch::randn({rows, latent_width()}, gen);
  }

 private:
  // One (body, out) pair per tower; a joint generator has one tower of every column.
  std::vector<torch::nn::Sequential> bodies_;
  std::vector<torch::nn::Linear> outs_;
  std::vector<OutputBlock> blocks_;
  int output_width_;
  int shared_z_;
  int private_z_;
  bool gumbel_;
  double tau_;
  // ConditionBlock: the conditioned block's index in blocks_ (-1: none) and its map.
  int conditioned_ = -1;
  torch::nn::Linear condition_{nullptr};
  // The conditioned block's logits given the row's other outputs (`row` holds zeros in
  // the block's own columns: forward() and SampleHard() draw it last).
  torch::Tensor ConditionedLogits(const torch::Tensor& logits, const torch::Tensor& row);
};
TORCH_MODULE(Generator);

// Multi-layer perceptron with LeakyReLU after every layer but (optionally) the last.
torch::nn::Sequential MakeMlp(int input, const std::vector<int>& hidden, int output, double slope,
                              bool activate_output);

// Number of scalar parameters of `module` (all of its submodules'): the P that DP-SGD
// noises (MeanGradientNoiseToClip, dp_sgd.h).
int64_t ParameterCount(const torch::nn::Module& module);

// feat_k: party columns -> d_h features (d_k - hidden... - d_h, LeakyReLU throughout).
class FeatureNetImpl : public torch::nn::Module {
 public:
  FeatureNetImpl(int input_width, const v1::ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x) { return net_->forward(x); }

 private:
  torch::nn::Sequential net_{nullptr};
};
TORCH_MODULE(FeatureNet);

// Scores a feature vector: head_k (d_h -> 1) or the shared critic D_s (K*d_h -> hidden -> 1).
class ScoreNetImpl : public torch::nn::Module {
 public:
  ScoreNetImpl(int input_width, const std::vector<int>& hidden, double slope);
  torch::Tensor forward(const torch::Tensor& h) { return net_->forward(h); }

 private:
  torch::nn::Sequential net_{nullptr};
};
TORCH_MODULE(ScoreNet);

// Guards LibTorch's process-wide default generator, which module constructors draw
// their initial weights from: seeding it and drawing must not interleave with another
// thread doing the same (parties and curator share one process in tests, and models
// can be built concurrently).
std::mutex& DefaultGeneratorMutex();

// Builds a module with parameters initialised from the stream (key, purpose) of a
// public key (the curator's seed), so every process that builds the same network
// (reference trainer, curator) starts from identical weights.
template <typename Holder, typename... Args>
Holder SeededModule(const std::string& key, const std::string& purpose, Args&&... args) {
  std::lock_guard<std::mutex> lock(DefaultGeneratorMutex());
  torch::manual_seed(DeriveStreamSeed(key, purpose, 0));
  return Holder(std::forward<Args>(args)...);
}

// Redraws every Linear layer's weight and bias from `stream` with LibTorch's default
// initialisation, U(-1/sqrt(fan_in), 1/sqrt(fan_in)). Fails on a module holding
// parameters of any other kind, which it would not know how to draw.
void InitializeFromStream(torch::nn::Module& module, SecureRandom& stream);

// Builds a module initialised from the ChaCha20 stream of (secret, purpose): a party's
// own networks, from a secret that party alone holds, so no other party or curator
// knows their starting weights.
template <typename Holder, typename... Args>
Holder PrivateModule(const std::string& secret, const std::string& purpose, Args&&... args) {
  Holder module{nullptr};
  {
    // Construction draws from the default generator, which SeededModule reseeds.
    std::lock_guard<std::mutex> lock(DefaultGeneratorMutex());
    module = Holder(std::forward<Args>(args)...);
  }
  SecureRandom stream = SecureRandom::Derived(secret, purpose, 0);
  InitializeFromStream(*module, stream);
  return module;
}

// Creates a CPU generator seeded from the counter-based stream (key, purpose, counter).
// Only for streams of a public key (the curator's z, Gumbel noise and shared penalty
// weights): its seed keeps 32 bits, and its outputs reveal its state. Anything keyed
// by a secret draws from SecureRandom::Derived instead.
at::Generator StreamGenerator(const std::string& key, const std::string& purpose, uint64_t counter);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_NETWORKS_H_
