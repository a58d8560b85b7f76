#ifndef VFSYNTH_COMMON_GAN_ENSEMBLE_PARTY_H_
#define VFSYNTH_COMMON_GAN_ENSEMBLE_PARTY_H_

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/gan/party_model.h"
#include "common/gan/shard_critics.h"
#include "common/nn/networks.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// A party's side of the gswgan and pate modes (docs/ensemble-modes.md).
// Its rows are split into E disjoint shards, each with its own ShardCritics critic
// trained without noise on that shard only; nothing computed from real rows leaves
// except through one of two Gaussian releases the ledger charges:
//  * the shared critic's input: feat(real batch rows), each row clipped to C_f plus
//    N(0, (z·2C_f)²); feat itself is trained only on synthetic rows (the fake-slice path
//    of the curator's feature gradient), never on real rows, so a row's release
//    depends on that row alone;
//  * the generator-phase slice gradient, sanitised per synthetic row (gswgan: one
//    secretly drawn shard critic, clipped and noised; pate: noisy vote aggregation).
class EnsembleParty {
 public:
  // `privacy.mode` is gswgan or pate; `table` and `feat` are the PartyModel's.
  EnsembleParty(const std::string& name, const v1::TrainingConfig& training,
                const v1::ModelConfig& model, PartyPrivacy privacy, const std::string& party_secret,
                torch::Tensor table, FeatureNet feat);

  // Critic step: one step of every shard critic against the fake slice, then the
  // released (h_real, h_fake) for the shared critic, both clipped and noised.
  absl::StatusOr<std::pair<torch::Tensor, torch::Tensor>> CriticFeatures(
      int64_t step, const torch::Tensor& real_batch, const torch::Tensor& fake_slice);
  // Trains feat on the curator's gradient for the synthetic rows only.
  absl::Status CriticUpdate(const torch::Tensor& grad_fake);
  // The sanitised gradient of the generator loss with respect to the slice, already
  // divided by the batch size (the curator's loss is a batch mean).
  absl::StatusOr<torch::Tensor> SanitisedSliceGradient(const torch::Tensor& slice);

  const std::vector<torch::Tensor>& shards() const { return shards_; }
  ShardCritics& critics() { return critics_; }

 private:
  absl::StatusOr<torch::Tensor> GswganGradient(const torch::Tensor& slice);
  torch::Tensor PateGradient(const torch::Tensor& slice);

  std::string name_;
  v1::TrainingConfig training_;
  PartyPrivacy privacy_;
  std::string party_secret_;  // this party's alone: shards, shard critics' init and batches
  torch::Tensor table_;
  FeatureNet feat_;
  std::unique_ptr<torch::optim::Adam> feat_optimizer_;
  std::vector<torch::Tensor> shards_;
  int64_t shard_batch_ = 0;
  ShardCritics critics_;
  torch::Tensor pending_fake_features_;  // feat(fake slice), graph kept for CriticUpdate
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_ENSEMBLE_PARTY_H_
