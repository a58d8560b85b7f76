#include "common/gan/curator_model.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/dp/dp_sgd.h"
#include "common/dp/per_example_gradients.h"
#include "common/gan/model_factory.h"
#include "common/gan/stream_purposes.h"
#include "common/nn/mlp_gradient_penalty.h"
#include "common/nn/wgan.h"
#include "common/random/secure_random.h"

namespace vfsynth {

CuratorModel::CuratorModel(const v1::ModelConfig& model, const v1::TrainingConfig& training,
                           std::vector<const TableEncoder*> encoders)
    : model_(model), training_(training) {
  for (const TableEncoder* encoder : encoders) widths_.push_back(encoder->width());
  generator_ = MakeGenerator(model_, training_, encoders);
  shared_critic_ = MakeSharedCritic(model_, training_.seed(), num_parties());
  generator_optimizer_ = MakeAdam(generator_->parameters(), training_.lr_generator(), training_);
  shared_optimizer_ = MakeAdam(shared_critic_->parameters(), training_.lr_critic(), training_);
  average_ = MakeGeneratorAverage(model_, training_, encoders, generator_);
  if (training_.experimental().cross_party_independence_weight() > 0)
    independence_.emplace(encoders, training_.label_column());
}

int64_t CuratorModel::shared_critic_parameters() const { return ParameterCount(*shared_critic_); }

std::vector<torch::Tensor> CuratorModel::Split(const torch::Tensor& joint) const {
  std::vector<torch::Tensor> slices;
  int offset = 0;
  for (int width : widths_) {
    slices.push_back(joint.narrow(1, offset, width));
    offset += width;
  }
  return slices;
}

std::vector<torch::Tensor> CuratorModel::CriticSlices(int64_t step) {
  const std::string key = CuratorStreamKey(training_.seed());
  torch::NoGradGuard no_grad;
  const torch::Tensor z = generator_->SampleLatent(training_.batch_size(),
                                                   StreamGenerator(key, streams::kCriticZ, step));
  return Split(generator_->forward(z, StreamGenerator(key, streams::kCriticGumbel, step)));
}

absl::StatusOr<CuratorModel::FeatureGradients> CuratorModel::SharedFeatureGradients(
    int64_t step, const std::vector<torch::Tensor>& h_real,
    const std::vector<torch::Tensor>& h_fake) {
  std::vector<torch::Tensor> real_leaves, fake_leaves;
  for (const auto& h : h_real) real_leaves.push_back(h.detach().requires_grad_(true));
  for (const auto& h : h_fake) fake_leaves.push_back(h.detach().requires_grad_(true));
  // D_s scores packs of model.experimental.pack rows; the penalty interpolates per packed row.
  const torch::Tensor hr = PackRows(torch::cat(real_leaves, 1), model_.experimental().pack());
  const torch::Tensor hf = PackRows(torch::cat(fake_leaves, 1), model_.experimental().pack());
  PendingSharedStep pending;
  pending.step = step;
  pending.hr = hr.detach();
  pending.hf = hf.detach();
  pending.alpha = torch::rand({hr.size(0), 1}, StreamGenerator(CuratorStreamKey(training_.seed()),
                                                               streams::kSharedGpAlpha, step));
  const double weight = model_.experimental().shared_critic_weight();
  FeatureGradients gradients;
  if (private_shared_) {
    // Per-example DP-SGD takes each row as one example (config.cc refuses the pair).
    if (model_.experimental().pack() != 1) {
      return absl::FailedPreconditionError(absl::StrCat("model.experimental.pack ",
                                                        model_.experimental().pack(),
                                                        " cannot be used with DP-SGD for D_s"));
    }
    CriticExamples examples;
    examples.real = pending.hr;
    examples.fake = pending.hf;
    examples.alpha = pending.alpha;
    examples.gp_lambda = training_.gp_lambda();
    // hf comes from the parties' sanitised feature nets applied to synthetic rows.
    examples.fake_terms_public = true;
    PerExampleGradientOptions options;
    options.input_gradients = true;  // the feature gradients the parties need
    ASSIGN_OR_RETURN(FactoredPerExampleGradients per_example,
                     CriticFactoredGradients({shared_critic_.ptr()}, examples, options));
    // Per-example input gradients are B times those of the batch-mean loss.
    const double scale = weight / static_cast<double>(hr.size(0));
    const int64_t width = hr.size(1) / num_parties();
    for (int k = 0; k < num_parties(); ++k) {
      gradients.real.push_back(per_example.input_grad_real.narrow(1, k * width, width) * scale);
      gradients.fake.push_back(per_example.input_grad_fake.narrow(1, k * width, width) * scale);
    }
    pending.per_example = std::move(per_example);
  } else {
    // The parties' update waits for the feature gradients only, and only the WGAN term
    // has any: the penalty's gradient with respect to its inputs is zero
    // (mlp_gradient_penalty.h). So they come from the forward pass alone.
    pending.wgan = CriticLoss(shared_critic_->forward(hr), shared_critic_->forward(hf));
    std::vector<torch::Tensor> leaves = real_leaves;
    leaves.insert(leaves.end(), fake_leaves.begin(), fake_leaves.end());
    const std::vector<torch::Tensor> feature_grads =
        torch::autograd::grad({pending.wgan}, leaves, /*grad_outputs=*/{}, /*retain_graph=*/true);
    const size_t parties = real_leaves.size();
    for (size_t k = 0; k < parties; ++k) {
      gradients.real.push_back(feature_grads[k] * weight);
      gradients.fake.push_back(feature_grads[parties + k] * weight);
    }
  }
  pending_shared_ = std::move(pending);
  return gradients;
}

absl::StatusOr<double> CuratorModel::StepSharedCritic() {
  if (!pending_shared_.has_value()) {
    return absl::FailedPreconditionError("D_s cannot step before its feature gradients are taken");
  }
  PendingSharedStep pending = *std::move(pending_shared_);
  pending_shared_.reset();
  if (pending.per_example.has_value()) return StepSharedCriticPrivately(pending);
  ASSIGN_OR_RETURN(
      const torch::Tensor penalty,
      MlpGradientPenalty({shared_critic_.ptr()}, pending.hr, pending.hf, pending.alpha));
  const torch::Tensor weighted_penalty = training_.gp_lambda() * penalty;
  // D_s's gradients: the WGAN term's (its graph kept), then the penalty's added to
  // them. That is how the reference trainer's one backward pass sums them, so the two
  // stay bit-identical (split_equivalence_test).
  shared_optimizer_->zero_grad();
  const std::vector<torch::Tensor> params = shared_critic_->parameters();
  torch::autograd::backward({pending.wgan}, /*grad_tensors=*/{}, /*retain_graph=*/false,
                            /*create_graph=*/false, params);
  torch::autograd::backward({weighted_penalty}, {}, false, false, params);
  const torch::Tensor loss = pending.wgan + weighted_penalty;
  shared_optimizer_->step();
  return loss.item<double>();
}

absl::StatusOr<double> CuratorModel::StepSharedCriticPrivately(PendingSharedStep& pending) {
  ASSIGN_OR_RETURN(std::vector<torch::Tensor> params, CriticParameters({shared_critic_.ptr()}));
  DpSgdOptions dp;
  dp.clip_norm = shared_clip_norm_;
  dp.noise_multiplier = shared_noise_multiplier_;
  shared_optimizer_->zero_grad();
  SecureRandom noise = SecureRandom::Derived(shared_noise_key_, "shared-critic-noise",
                                             static_cast<uint64_t>(pending.step));
  ASSIGN_OR_RETURN(const ClipDiagnostics clip,
                   DpSgdStepFactored(params, pending.per_example->grads, dp, noise));
  LogClipDiagnostics("D_s", pending.step, training_.log_every(), clip);
  shared_optimizer_->step();
  return pending.per_example->loss.mean().item<double>();
}

absl::StatusOr<CuratorModel::SharedCriticResult> CuratorModel::SharedCriticStep(
    int64_t step, const std::vector<torch::Tensor>& h_real,
    const std::vector<torch::Tensor>& h_fake) {
  SharedCriticResult result;
  ASSIGN_OR_RETURN(result.gradients, SharedFeatureGradients(step, h_real, h_fake));
  ASSIGN_OR_RETURN(result.loss, StepSharedCritic());
  return result;
}

std::vector<torch::Tensor> CuratorModel::GeneratorSlices(int64_t round) {
  const std::string key = CuratorStreamKey(training_.seed());
  const torch::Tensor z = generator_->SampleLatent(
      training_.batch_size(), StreamGenerator(key, streams::kGeneratorZ, round));
  pending_fake_ = generator_->forward(z, StreamGenerator(key, streams::kGeneratorGumbel, round));
  pending_round_ = round;
  std::vector<torch::Tensor> slices;
  for (const auto& slice : Split(pending_fake_)) slices.push_back(slice.detach());
  return slices;
}

std::vector<torch::Tensor> CuratorModel::SharedGeneratorGradients(
    const std::vector<torch::Tensor>& h) {
  std::vector<torch::Tensor> leaves;
  for (const auto& part : h) leaves.push_back(part.detach().requires_grad_(true));
  const torch::Tensor loss =
      -model_.experimental().shared_critic_weight() *
      shared_critic_->forward(PackRows(torch::cat(leaves, 1), model_.experimental().pack())).mean();
  shared_generator_loss_ = loss.item<double>();
  return torch::autograd::grad({loss}, leaves);
}

absl::Status CuratorModel::GeneratorStep(int64_t round,
                                         const std::vector<torch::Tensor>& slice_grads) {
  if (round != pending_round_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "slice gradients for round ", round, " but round ", pending_round_, " is pending"));
  }
  pending_round_ = -1;
  const std::vector<torch::Tensor> params = generator_->parameters();
  std::vector<torch::Tensor> grads;
  if (independence_.has_value() || label_pairs_.has_value()) {
    // The parties' slice gradients and the curator's own terms, in one backward pass.
    torch::Tensor loss = (pending_fake_ * torch::cat(slice_grads, 1)).sum();
    if (independence_.has_value()) {
      loss = loss + training_.experimental().cross_party_independence_weight() *
                        independence_->Loss(pending_fake_);
    }
    if (label_pairs_.has_value())
      loss = loss + label_pair_weight_ *
                        label_pairs_->Loss(pending_fake_,
                                           training_.experimental().marginal_reverse_weight());
    grads = torch::autograd::grad({loss}, params);
  } else {
    grads = torch::autograd::grad({pending_fake_}, params, {torch::cat(slice_grads, 1)});
  }
  for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i];
  generator_optimizer_->step();
  if (average_ != nullptr) average_->Update(generator_);
  pending_fake_ = torch::Tensor();
  return absl::OkStatus();
}

}  // namespace vfsynth
