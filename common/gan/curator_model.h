#ifndef VFSYNTH_COMMON_GAN_CURATOR_MODEL_H_
#define VFSYNTH_COMMON_GAN_CURATOR_MODEL_H_

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/encoder.h"
#include "common/dp/per_example_gradients.h"
#include "common/gan/cross_party_independence.h"
#include "common/gan/marginal_target.h"
#include "common/nn/generator_average.h"
#include "common/nn/networks.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// The curator's half of the round protocol (docs/architecture.md, "One round"): the global
// generator G and the shared critic D_s. Party order is fixed at construction (slices, features and
// gradients are indexed by party). Inputs must already be validated by the caller.
class CuratorModel {
 public:
  // `encoders` give each party's public column layout (from its schema).
  CuratorModel(const v1::ModelConfig& model, const v1::TrainingConfig& training,
               std::vector<const TableEncoder*> encoders);

  // dpsgd: D_s steps with DP-SGD on exact per-example gradients (noise std z * 2C).
  // Step s's noise is the ChaCha20 stream of (noise_key, s): a step replayed after a
  // restart draws the noise it drew before, so nobody sees two versions of one step.
  // The key is the curator's secret, never in a checkpoint.
  void SetSharedCriticPrivacy(double noise_multiplier, double clip_norm, std::string noise_key) {
    private_shared_ = true;
    shared_noise_multiplier_ = noise_multiplier;
    shared_clip_norm_ = clip_norm;
    shared_noise_key_ = std::move(noise_key);
  }

  // Label pairs (label_pairs.h): G's objective gains weight * target.Loss(G's batch).
  void SetLabelPairTarget(MarginalTarget target, double weight) {
    label_pairs_.emplace(std::move(target));
    label_pair_weight_ = weight;
  }
  bool has_label_pair_target() const { return label_pairs_.has_value(); }

  int num_parties() const { return static_cast<int>(widths_.size()); }
  // D_s's parameter count: what DP-SGD noises in dpsgd.
  int64_t shared_critic_parameters() const;
  int party_width(int party) const { return widths_[party]; }

  // Critic step: fake slices of G(z) for every party (no graph).
  std::vector<torch::Tensor> CriticSlices(int64_t step);

  // One Adam step of D_s on L_s = mean D_s(H_f) - mean D_s(H_r) + λ GP, H packed by
  // model.experimental.pack (PackRows), in two halves so that the feature gradients the
  // parties wait for can leave before D_s's own update: SharedFeatureGradients takes the
  // forward pass (in dpsgd, the per-example gradients) and returns dL_s/dh per unpacked
  // row and party; StepSharedCritic then takes the penalty, D_s's own gradients (noised
  // in dpsgd) and its Adam step, and returns L_s. SharedCriticStep runs both.
  struct FeatureGradients {
    std::vector<torch::Tensor> real;  // dL_s/dh_real per party
    std::vector<torch::Tensor> fake;  // dL_s/dh_fake per party
  };
  absl::StatusOr<FeatureGradients> SharedFeatureGradients(int64_t step,
                                                          const std::vector<torch::Tensor>& h_real,
                                                          const std::vector<torch::Tensor>& h_fake);
  // FAILED_PRECONDITION unless SharedFeatureGradients ran since the last step.
  absl::StatusOr<double> StepSharedCritic();
  struct SharedCriticResult {
    FeatureGradients gradients;
    double loss = 0;
  };
  absl::StatusOr<SharedCriticResult> SharedCriticStep(int64_t step,
                                                      const std::vector<torch::Tensor>& h_real,
                                                      const std::vector<torch::Tensor>& h_fake);

  // Generator round: slices of G(z) (graph kept for GeneratorStep).
  std::vector<torch::Tensor> GeneratorSlices(int64_t round);
  // dL/dh for L = -mean D_s(concat h), per party; D_s does not step.
  std::vector<torch::Tensor> SharedGeneratorGradients(const std::vector<torch::Tensor>& h);
  // L of the last SharedGeneratorGradients: the shared critic's part of the generator loss.
  double shared_generator_loss() const { return shared_generator_loss_; }
  // Backpropagates the parties' slice gradients through G and steps it.
  absl::Status GeneratorStep(int64_t round, const std::vector<torch::Tensor>& slice_grads);

  Generator& generator() { return generator_; }
  // What synthesis publishes: the weight average if training.experimental.generator_average_decay
  // > 0, else the last iterate.
  Generator& published_generator() {
    return average_ != nullptr ? average_->average() : generator_;
  }
  GeneratorAverage* generator_average() { return average_.get(); }  // null if off
  ScoreNet& shared_critic() { return shared_critic_; }
  // For checkpoints (model_state.h).
  torch::optim::Adam& generator_optimizer() { return *generator_optimizer_; }
  torch::optim::Adam& shared_optimizer() { return *shared_optimizer_; }

 private:
  std::vector<torch::Tensor> Split(const torch::Tensor& joint) const;

  // A D_s step between its two halves.
  struct PendingSharedStep {
    int64_t step = 0;
    torch::Tensor hr, hf, alpha;  // packed, detached
    torch::Tensor wgan;           // without DP-SGD: the WGAN term, its graph kept
    std::optional<FactoredPerExampleGradients> per_example;  // dpsgd
  };
  absl::StatusOr<double> StepSharedCriticPrivately(PendingSharedStep& pending);

  v1::ModelConfig model_;
  v1::TrainingConfig training_;
  std::vector<int> widths_;
  Generator generator_{nullptr};
  ScoreNet shared_critic_{nullptr};
  std::unique_ptr<torch::optim::Adam> generator_optimizer_;
  std::unique_ptr<torch::optim::Adam> shared_optimizer_;
  std::unique_ptr<GeneratorAverage> average_;
  std::optional<CrossPartyIndependence>
      independence_;  // training.experimental.cross_party_independence_weight > 0
  std::optional<MarginalTarget> label_pairs_;
  double label_pair_weight_ = 0;
  bool private_shared_ = false;
  double shared_noise_multiplier_ = 0;
  double shared_clip_norm_ = 1;
  std::string shared_noise_key_;
  std::optional<PendingSharedStep> pending_shared_;
  int64_t pending_round_ = -1;
  double shared_generator_loss_ = 0;
  torch::Tensor pending_fake_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_CURATOR_MODEL_H_
