#include "common/gan/party_model.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/dp/dp_sgd.h"
#include "common/dp/per_example_gradients.h"
#include "common/gan/batch_sampler.h"
#include "common/gan/ensemble_party.h"
#include "common/gan/model_factory.h"
#include "common/nn/mlp_gradient_penalty.h"
#include "common/nn/wgan.h"
#include "common/privacy/mode_traits.h"

namespace vfsynth {

PartyModel::PartyModel(std::string name, const v1::ModelConfig& model,
                       const v1::TrainingConfig& training, std::string sampling_secret,
                       std::string party_secret, torch::Tensor table)
    : name_(std::move(name)),
      model_(model),
      training_(training),
      sampling_secret_(std::move(sampling_secret)),
      party_secret_(std::move(party_secret)),
      table_(std::move(table)) {
  feat_ = MakePartyFeatureNet(model, party_secret_, width());
  head_ = MakePartyHead(model, party_secret_);
  std::vector<torch::Tensor> params = feat_->parameters();
  for (const auto& param : head_->parameters()) params.push_back(param);
  optimizer_ = MakeAdam(params, training_.lr_critic(), training_);
}

PartyModel::~PartyModel() = default;

absl::Status PartyModel::SetPrivacy(PartyPrivacy privacy) {
  if (privacy::TraitsOf(privacy.mode).draws_noise() && privacy.noise == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "privacy mode ", v1::PrivacyConfig::Mode_Name(privacy.mode), " needs its noise streams"));
  }
  privacy_ = std::move(privacy);
  ensemble_.reset();
  if (privacy::TraitsOf(privacy_.mode).ensemble()) {
    ensemble_ = std::make_unique<EnsembleParty>(name_, training_, model_, privacy_, party_secret_,
                                                table_, feat_);
  }
  return absl::OkStatus();
}

torch::Tensor PartyModel::RealBatch(int64_t step) const {
  return table_.index_select(
      0, RealBatchIndices(sampling_secret_, rows(), training_.batch_size(), step));
}

absl::StatusOr<std::pair<torch::Tensor, torch::Tensor>> PartyModel::CriticFeatures(
    int64_t step, const torch::Tensor& fake_slice) {
  // The batch is a function of the shared secret and the step only: one drawn ahead
  // (PrepareAhead) is the same rows.
  real_ = next_real_step_ == step ? next_real_ : RealBatch(step);
  next_real_step_ = -1;
  next_real_ = torch::Tensor();
  slice_ = fake_slice;
  local_ = LocalPart();  // whatever was prepared belonged to the previous pending state
  if (ensemble_ != nullptr) {
    pending_step_ = step;
    return ensemble_->CriticFeatures(step, real_, fake_slice);
  }
  h_real_ = feat_->forward(real_);
  h_fake_ = feat_->forward(slice_);
  pending_step_ = step;
  if (privacy::TraitsOf(privacy_.mode).party_release !=
      privacy::PartyRelease::kFeaturesAndGradient) {
    return std::make_pair(h_real_.detach(), h_fake_.detach());
  }
  // Synthetic rows get the same clipping and noise, so noise does not tell them apart.
  // Each from its own stream: the curator can recompute the synthetic rows' clean features.
  ASSIGN_OR_RETURN(NoisyRows real,
                   ClipAndNoiseRows(h_real_.detach(), privacy_.feature_clip_norm,
                                    privacy_.noise_multiplier, privacy_.noise->real_features));
  ASSIGN_OR_RETURN(NoisyRows fake,
                   ClipAndNoiseRows(h_fake_.detach(), privacy_.feature_clip_norm,
                                    privacy_.noise_multiplier, privacy_.noise->synthetic_features));
  return std::make_pair(real.rows, fake.rows);
}

absl::StatusOr<double> PartyModel::CriticUpdate(int64_t step, const torch::Tensor& grad_real,
                                                const torch::Tensor& grad_fake) {
  // pending_step_ is -1 when nothing is pending: a message for step -1 must not match it.
  if (pending_step_ < 0 || step != pending_step_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "feature gradients for step ", step, " but ",
        pending_step_ < 0 ? "no step" : absl::StrCat("step ", pending_step_), " is pending"));
  }
  pending_step_ = -1;
  if (ensemble_ != nullptr) {
    real_ = slice_ = torch::Tensor();
    RETURN_IF_ERROR(ensemble_->CriticUpdate(grad_fake));
    return 0.0;  // the shard critics' losses stay local
  }
  if (privacy::TraitsOf(privacy_.mode).draws_noise()) {
    return PrivateCriticUpdate(step, LocalGpAlpha(step), grad_real, grad_fake);
  }
  if (!local_.ready) RETURN_IF_ERROR(PrepareLocalPart(step));
  // <g, h> has gradient g with respect to h: the curator's dL_s/dh joins the local
  // loss's dL/dh and both flow into feat. The fake rows' pass, then the real rows':
  // after the penalty's gradients (already in .grad) that is the order in which the
  // reference trainer's single backward pass sums them, so the split's parameters are
  // bit-identical to its (Adam can amplify a rounding-level difference past the
  // equivalence tests' tolerance).
  torch::autograd::backward({h_fake_}, {local_.grad_fake + grad_fake});
  torch::autograd::backward({h_real_}, {local_.grad_real + grad_real});
  optimizer_->step();
  real_ = slice_ = h_real_ = h_fake_ = torch::Tensor();
  const double loss = local_.loss;
  local_ = LocalPart();
  return loss;
}

torch::Tensor PartyModel::LocalGpAlpha(int64_t step) const {
  return LocalGpAlphas(sampling_secret_, name_, real_.size(0), step);
}

absl::Status PartyModel::PrepareLocalPart(int64_t step) {
  // The local WGAN-GP loss with feat's outputs as leaves: its gradients go to head and
  // (through the penalty's own forward pass) to feat, and dL/dh waits for the
  // curator's dL_s/dh to be added (CriticUpdate).
  const torch::Tensor h_real = h_real_.detach().requires_grad_(true);
  const torch::Tensor h_fake = h_fake_.detach().requires_grad_(true);
  ASSIGN_OR_RETURN(
      const torch::Tensor penalty,
      MlpGradientPenalty({feat_.ptr(), head_.ptr()}, real_, slice_, LocalGpAlpha(step)));
  const torch::Tensor local =
      CriticLoss(head_->forward(h_real), head_->forward(h_fake)) + training_.gp_lambda() * penalty;
  optimizer_->zero_grad();
  local.backward();
  local_.grad_real = h_real.grad();
  local_.grad_fake = h_fake.grad();
  local_.loss = local.item<double>();
  local_.ready = true;
  return absl::OkStatus();
}

void PartyModel::PrepareAhead() {
  if (pending_step_ < 0) return;  // nothing to prepare for (or already done)
  if (ensemble_ == nullptr && !privacy::TraitsOf(privacy_.mode).draws_noise() && !local_.ready) {
    // A failure leaves local_ unready: CriticUpdate prepares again and returns the error.
    PrepareLocalPart(pending_step_).IgnoreError();
  }
  if (next_real_step_ != pending_step_ + 1) {
    next_real_ = RealBatch(pending_step_ + 1);
    next_real_step_ = pending_step_ + 1;
  }
}

absl::StatusOr<double> PartyModel::PrivateCriticUpdate(int64_t step, const torch::Tensor& alpha,
                                                       const torch::Tensor& grad_real,
                                                       const torch::Tensor& grad_fake) {
  const std::vector<CriticStage> stages = {feat_.ptr(), head_.ptr()};
  const double b = static_cast<double>(real_.size(0));
  CriticExamples examples;
  examples.real = real_;
  examples.fake = slice_;
  examples.alpha = alpha;
  examples.gp_lambda = training_.gp_lambda();
  // The curator's gradients are of its batch-mean loss; per example they are B times that.
  examples.upstream_real = grad_real * b;
  examples.upstream_fake = grad_fake * b;
  // In strict the curator's D_s sees only released (noised) features, so its gradient for
  // the fake rows is post-processing; in dpsgd and vflgan it is taken next to clean real
  // features and stays with the real-row half.
  examples.fake_terms_public =
      privacy::TraitsOf(privacy_.mode).party_release == privacy::PartyRelease::kFeaturesAndGradient;
  real_ = slice_ = h_real_ = h_fake_ = torch::Tensor();
  ASSIGN_OR_RETURN(FactoredPerExampleGradients per_example,
                   CriticFactoredGradients(stages, examples));
  ASSIGN_OR_RETURN(std::vector<torch::Tensor> params, CriticParameters(stages));
  DpSgdOptions options;
  options.clip_norm = privacy_.clip_norm;
  options.noise_multiplier = privacy_.noise_multiplier;
  optimizer_->zero_grad();
  ClipDiagnostics clip;
  if (privacy::TraitsOf(privacy_.mode).party_release ==
      privacy::PartyRelease::kFirstLayerGradient) {
    // VFLGAN sanitises only the first layer's weight gradient; the rest is plain.
    ASSIGN_OR_RETURN(clip, DpSgdStepFactored({params[0]}, {per_example.grads[0]}, options,
                                             privacy_.noise->critic_gradients));
    const torch::Tensor mean = torch::full({static_cast<int64_t>(b)}, 1.0 / b, torch::kDouble);
    for (size_t p = 1; p < params.size(); ++p) {
      params[p].mutable_grad() = FactoredWeightedSum(per_example.grads[p], mean);
    }
  } else {
    ASSIGN_OR_RETURN(clip, DpSgdStepFactored(params, per_example.grads, options,
                                             privacy_.noise->critic_gradients));
  }
  LogClipDiagnostics("", step, training_.log_every(), clip);
  optimizer_->step();
  return per_example.loss.mean().item<double>();
}

torch::Tensor PartyModel::GeneratorFeatures(int64_t round, const torch::Tensor& fake_slice) {
  gen_slice_ = fake_slice.detach().requires_grad_(true);
  gen_features_ = feat_->forward(gen_slice_);
  pending_round_ = round;
  return gen_features_.detach();
}

absl::Status PartyModel::CheckPendingRound(int64_t round) const {
  if (pending_round_ >= 0 && round == pending_round_) return absl::OkStatus();  // -1: none
  return absl::FailedPreconditionError(absl::StrCat(
      "feature gradient for round ", round, " but ",
      pending_round_ < 0 ? "no round" : absl::StrCat("round ", pending_round_), " is pending"));
}

absl::StatusOr<torch::Tensor> PartyModel::SliceGradient(int64_t round,
                                                        const torch::Tensor& grad_features) {
  RETURN_IF_ERROR(CheckPendingRound(round));
  pending_round_ = -1;
  // The marginal target is released (or exact, in none): its loss is post-processing.
  const torch::Tensor marginal =
      marginal_target_.has_value()
          ? training_.marginal_weight() *
                marginal_target_->Loss(gen_slice_,
                                       training_.experimental().marginal_reverse_weight())
          : torch::zeros({}, gen_slice_.options());
  if (ensemble_ != nullptr) {
    // D_s's gradient through feat (trained on synthetic rows only) is post-processing;
    // the ensemble's part is the sanitised release.
    torch::Tensor shared =
        torch::autograd::grad({(gen_features_ * grad_features).sum() + marginal}, {gen_slice_})[0];
    ASSIGN_OR_RETURN(const torch::Tensor sanitised, ensemble_->SanitisedSliceGradient(gen_slice_));
    gen_slice_ = gen_features_ = torch::Tensor();
    return shared + sanitised;
  }
  const torch::Tensor loss =
      -head_->forward(gen_features_).mean() + (gen_features_ * grad_features).sum() + marginal;
  torch::Tensor grad = torch::autograd::grad({loss}, {gen_slice_})[0];
  gen_slice_ = gen_features_ = torch::Tensor();
  return grad;
}

}  // namespace vfsynth
