#ifndef VFSYNTH_COMMON_GAN_PARTY_MODEL_H_
#define VFSYNTH_COMMON_GAN_PARTY_MODEL_H_

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/gan/marginal_target.h"
#include "common/nn/networks.h"
#include "common/privacy/party_noise.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// How a party sanitises what its real rows influence (docs/privacy.md). Set by the party
// from its own configuration only, never from anything the curator sends.
struct PartyPrivacy {
  v1::PrivacyConfig::Mode mode = v1::PrivacyConfig::none;
  double noise_multiplier = 0;        // z: every release has noise std z * 2C
  double clip_norm = 1;               // C: per-example critic-gradient clip
  double feature_clip_norm = 1;       // C_f: per-row feature clip (strict)
  std::shared_ptr<PartyNoise> noise;  // set in every mode but none
  v1::EnsembleConfig ensemble;        // gswgan / pate
};

class EnsembleParty;

// A party's half of the round protocol (docs/architecture.md, "One round"): its critic D_k = head_k
// ∘ feat_k over its private, aligned, encoded rows. It is driven one message at a time and keeps
// the autograd graph between the two halves of a step. All tensor arguments must already be
// validated (shape, finiteness) by the caller.
class PartyModel {
 public:
  // `sampling_secret` is shared by the parties (real batches, local penalty weights);
  // `party_secret` is this party's alone (its networks' initialisation, its shards).
  PartyModel(std::string name, const v1::ModelConfig& model, const v1::TrainingConfig& training,
             std::string sampling_secret, std::string party_secret, torch::Tensor table);
  ~PartyModel();

  // gswgan / pate also build the shard-critic ensemble (ensemble_party.h), which then
  // replaces the local critic head_k: its training would need real rows un-noised.
  // Fails when a DP mode comes without its noise streams.
  absl::Status SetPrivacy(PartyPrivacy privacy);

  int width() const { return static_cast<int>(table_.size(1)); }
  int64_t rows() const { return table_.size(0); }
  const torch::Tensor& table() const { return table_; }  // the aligned, encoded records

  // Critic step, first half: draws the shared real batch for `step`, returns
  // (h_real, h_fake) = feat(real batch), feat(fake slice), detached; in strict mode
  // both are row-clipped to C_f and noised before they are returned (released).
  absl::StatusOr<std::pair<torch::Tensor, torch::Tensor>> CriticFeatures(
      int64_t step, const torch::Tensor& fake_slice);
  // Second half: local WGAN-GP loss plus the curator's feature gradients pushed
  // through feat; one Adam step on feat and head. Returns the local loss. In the DP
  // modes the step is DP-SGD on exact per-example gradients (vflgan: only feat's
  // first-layer weight is clipped and noised, as in the paper).
  absl::StatusOr<double> CriticUpdate(int64_t step, const torch::Tensor& grad_real,
                                      const torch::Tensor& grad_fake);
  // Optional, between the halves of a step (while the curator computes): in mode none
  // the part of the update that does not depend on the curator's gradients (the local
  // WGAN-GP loss's forward and backward), and in every mode the next step's real
  // batch. Only a function of the pending step's inputs and the current critic, which
  // nothing but CriticUpdate changes: CriticUpdate's result is the same with or
  // without it. A no-op when no step is pending.
  void PrepareAhead();
  // The critic step whose features await their gradients, or -1.
  int64_t pending_step() const { return pending_step_; }

  // Generator round: features of the fake slice, then the gradient of
  // -mean head(h) + <grad_features, h> (+ marginal_weight * the marginal loss, if a
  // target is set) with respect to the slice.
  torch::Tensor GeneratorFeatures(int64_t round, const torch::Tensor& fake_slice);
  absl::StatusOr<torch::Tensor> SliceGradient(int64_t round, const torch::Tensor& grad_features);
  // FAILED_PRECONDITION unless `round`'s generator features are pending (SliceGradient's
  // check, for callers that must refuse before charging for the gradient).
  absl::Status CheckPendingRound(int64_t round) const;

  // The marginals G's slices are pulled towards (training.marginal_weight > 0): exact in
  // mode none, a DP release otherwise (the caller draws and charges it).
  void SetMarginalTarget(MarginalTarget target) { marginal_target_ = std::move(target); }
  const std::optional<MarginalTarget>& marginal_target() const { return marginal_target_; }

  FeatureNet& feat() { return feat_; }
  const PartyPrivacy& privacy() const { return privacy_; }
  ScoreNet& head() { return head_; }
  torch::optim::Adam& optimizer() { return *optimizer_; }  // for checkpoints (model_state.h)

 private:
  // The shared real batch of `step` (counter-based: the same for every party).
  torch::Tensor RealBatch(int64_t step) const;
  // The local gradient penalty's interpolation weights of `step`.
  torch::Tensor LocalGpAlpha(int64_t step) const;
  // Mode none: the local loss of the pending step into the parameters' gradients and local_.
  absl::Status PrepareLocalPart(int64_t step);
  absl::StatusOr<double> PrivateCriticUpdate(int64_t step, const torch::Tensor& alpha,
                                             const torch::Tensor& grad_real,
                                             const torch::Tensor& grad_fake);

  std::string name_;
  v1::ModelConfig model_;
  v1::TrainingConfig training_;
  std::string sampling_secret_;
  std::string party_secret_;
  torch::Tensor table_;
  FeatureNet feat_{nullptr};
  ScoreNet head_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  PartyPrivacy privacy_;
  std::unique_ptr<EnsembleParty> ensemble_;
  std::optional<MarginalTarget> marginal_target_;

  // Pending state between the two halves of a step.
  int64_t pending_step_ = -1;
  torch::Tensor real_, slice_, h_real_, h_fake_;
  // PrepareLocalPart's result for the pending step: the local loss's gradients are in
  // the parameters' .grad, its gradients with respect to h_real_ and h_fake_ here.
  struct LocalPart {
    bool ready = false;
    torch::Tensor grad_real, grad_fake;
    double loss = 0;
  };
  LocalPart local_;
  int64_t next_real_step_ = -1;  // the step whose real batch next_real_ holds (PrepareAhead)
  torch::Tensor next_real_;
  int64_t pending_round_ = -1;
  torch::Tensor gen_slice_, gen_features_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_PARTY_MODEL_H_
