#include "common/model/party_model.h"

#include "absl/strings/str_cat.h"
#include "common/model/model_factory.h"
#include "common/model/stream_purposes.h"
#include "common/model/wgan.h"

namespace vfsynth {

PartyModel::PartyModel(std::string name, const v1::ModelConfig& model,
                       const v1::TrainingConfig& training, std::string sampling_secret,
                       torch::Tensor table)
    : name_(std::move(name)),
      training_(training),
      sampling_secret_(std::move(sampling_secret)),
      table_(std::move(table)) {
  feat_ = MakePartyFeatureNet(model, sampling_secret_, name_, width());
  head_ = MakePartyHead(model, sampling_secret_, name_);
  std::vector<torch::Tensor> params = feat_->parameters();
  for (const auto& param : head_->parameters()) params.push_back(param);
  optimizer_ = MakeAdam(params, training_.lr_critic(), training_);
}

std::pair<torch::Tensor, torch::Tensor> PartyModel::CriticFeatures(int64_t step,
                                                                   const torch::Tensor& fake_slice) {
  const torch::Tensor indices =
      torch::randperm(rows(), StreamGenerator(sampling_secret_, streams::kRealBatch, step),
                      torch::kLong)
          .narrow(0, 0, training_.batch_size());
  real_ = table_.index_select(0, indices);
  slice_ = fake_slice;
  h_real_ = feat_->forward(real_);
  h_fake_ = feat_->forward(slice_);
  pending_step_ = step;
  return {h_real_.detach(), h_fake_.detach()};
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
  const torch::Tensor alpha = torch::rand(
      {real_.size(0), 1}, StreamGenerator(sampling_secret_, streams::LocalGpAlpha(name_), step));
  auto critic = [this](const torch::Tensor& x) { return head_->forward(feat_->forward(x)); };
  const torch::Tensor local = CriticLoss(head_->forward(h_real_), head_->forward(h_fake_)) +
                              training_.gp_lambda() * GradientPenalty(critic, real_, slice_, alpha);
  // <g, h> has gradient g with respect to h: the curator's dL_s/dh flows into feat.
  const torch::Tensor total = local + (h_real_ * grad_real).sum() + (h_fake_ * grad_fake).sum();
  optimizer_->zero_grad();
  total.backward();
  optimizer_->step();
  real_ = slice_ = h_real_ = h_fake_ = torch::Tensor();
  return local.item<double>();
}

torch::Tensor PartyModel::GeneratorFeatures(int64_t round, const torch::Tensor& fake_slice) {
  gen_slice_ = fake_slice.detach().requires_grad_(true);
  gen_features_ = feat_->forward(gen_slice_);
  pending_round_ = round;
  return gen_features_.detach();
}

absl::StatusOr<torch::Tensor> PartyModel::SliceGradient(int64_t round,
                                                        const torch::Tensor& grad_features) {
  if (pending_round_ < 0 || round != pending_round_) {  // -1: nothing pending
    return absl::FailedPreconditionError(absl::StrCat(
        "feature gradient for round ", round, " but ",
        pending_round_ < 0 ? "no round" : absl::StrCat("round ", pending_round_), " is pending"));
  }
  pending_round_ = -1;
  const torch::Tensor loss =
      -head_->forward(gen_features_).mean() + (gen_features_ * grad_features).sum();
  torch::Tensor grad = torch::autograd::grad({loss}, {gen_slice_})[0];
  gen_slice_ = gen_features_ = torch::Tensor();
  return grad;
}

}  // namespace vfsynth
