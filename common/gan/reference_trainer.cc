#include "common/gan/reference_trainer.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/base/stream_seed.h"
#include "common/config/config.h"
#include "common/data/alignment.h"
#include "common/gan/batch_sampler.h"
#include "common/gan/model_factory.h"
#include "common/gan/stream_purposes.h"
#include "common/nn/mlp_gradient_penalty.h"
#include "common/nn/wgan.h"

namespace vfsynth {
namespace {

// The critics are MLPs built by model_factory, so this cannot fail short of a bug; if it
// does, it fails as LibTorch's own errors do here (Train reports them).
torch::Tensor Penalty(const std::vector<CriticStage>& stages, const torch::Tensor& real,
                      const torch::Tensor& fake, const torch::Tensor& alpha) {
  absl::StatusOr<torch::Tensor> penalty = MlpGradientPenalty(stages, real, fake, alpha);
  TORCH_CHECK(penalty.ok(), penalty.status().ToString());
  return *std::move(penalty);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReferenceTrainer>> ReferenceTrainer::Create(
    const v1::LocalRunConfig& config) {
  std::unique_ptr<ReferenceTrainer> trainer(new ReferenceTrainer(config));
  RETURN_IF_ERROR(trainer->Build());
  return trainer;
}

absl::Status ReferenceTrainer::Build() {
  const v1::TrainingConfig& t = config_.training();
  torch::set_num_threads(t.threads());
  // Load every party and align on tokens: the intersection the distributed parties'
  // PSI finds, in their canonical (token) order.
  std::vector<std::vector<std::string>> tokens;
  for (const v1::PartyDataConfig& party_config : config_.parties()) {
    Party party;
    party.name = party_config.name();
    ASSIGN_OR_RETURN(party.data, LoadPartyData(party_config.data(), party_config.schema(),
                                               config_.skip_bad_rows()));
    if (party.data.skipped_rows > 0) {
      spdlog::warn("party {}: skipped {} malformed rows", party.name, party.data.skipped_rows);
    }
    if (party.data.clipped_values > 0) {
      spdlog::warn("party {}: clipped {} values to the schema bounds", party.name,
                   party.data.clipped_values);
    }
    ASSIGN_OR_RETURN(std::vector<std::string> party_tokens,
                     AlignmentTokens(config_.alignment_key(), party.data.ids));
    tokens.push_back(std::move(party_tokens));
    parties_.push_back(std::move(party));
  }
  const std::vector<std::string> common = IntersectTokens(tokens);
  rows_ = static_cast<int64_t>(common.size());
  if (rows_ < t.batch_size()) {
    return absl::InvalidArgumentError(absl::StrCat("only ", rows_,
                                                   " records are held by every party; batch_size ",
                                                   t.batch_size(), " needs at least that many"));
  }
  spdlog::info("aligned {} records held by all {} parties", rows_, parties_.size());

  const v1::ModelConfig& m = config_.model();
  std::vector<const TableEncoder*> encoders;
  for (size_t p = 0; p < parties_.size(); ++p) {
    Party& party = parties_[p];
    ASSIGN_OR_RETURN(const std::vector<int64_t> order, RowOrder(tokens[p], common));
    ReorderRows(order, &party.data);
    const int width = party.data.encoder.width();
    party.table =
        torch::from_blob(party.data.encoded.values.data(), {rows_, width}, torch::kFloat32).clone();
    party.data.encoded.values.clear();
    party.data.encoded.values.shrink_to_fit();
    party.offset = total_width_;
    total_width_ += width;
    encoders.push_back(&party.data.encoder);
    const std::string party_secret = ReferencePartySecret(t.seed(), party.name);
    party.feat = MakePartyFeatureNet(m, party_secret, width);
    party.head = MakePartyHead(m, party_secret);
    std::vector<torch::Tensor> params = party.feat->parameters();
    for (const auto& param : party.head->parameters()) params.push_back(param);
    party.optimizer = MakeAdam(params, t.lr_critic(), t);
    if (t.marginal_weight() > 0) {
      ASSIGN_OR_RETURN(party.marginals,
                       MarginalTarget::FromTable(party.table, party.data.encoder.blocks(),
                                                 MarginalOptionsFor(t), 0, nullptr));
    }
  }
  ASSIGN_OR_RETURN(publication_temperature_, PublicationTemperatures(config_.output(), encoders));
  RETURN_IF_ERROR(CheckConditionedColumn(m, encoders));
  generator_ = MakeGenerator(m, t, encoders);
  if (t.experimental().cross_party_independence_weight() > 0) independence_.emplace(encoders);
  shared_critic_ = MakeSharedCritic(m, t.seed(), static_cast<int>(parties_.size()));
  generator_optimizer_ = MakeAdam(generator_->parameters(), t.lr_generator(), t);
  shared_optimizer_ = MakeAdam(shared_critic_->parameters(), t.lr_critic(), t);
  average_ = MakeGeneratorAverage(m, t, encoders, generator_);
  return absl::OkStatus();
}

torch::Tensor ReferenceTrainer::SampleRealIndices(int64_t step) const {
  return RealBatchIndices(config_.sampling_secret(), rows_, config_.training().batch_size(), step);
}

double ReferenceTrainer::CriticStep(int64_t step) {
  const v1::TrainingConfig& t = config_.training();
  const int64_t b = t.batch_size();
  const std::string key = CuratorStreamKey(t.seed());
  torch::Tensor fake;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor z =
        generator_->SampleLatent(b, StreamGenerator(key, streams::kCriticZ, step));
    fake = generator_->forward(z, StreamGenerator(key, streams::kCriticGumbel, step));
  }
  const torch::Tensor indices = SampleRealIndices(step);
  std::vector<torch::Tensor> h_real, h_fake;
  torch::Tensor total = torch::zeros({});
  for (Party& party : parties_) {
    const torch::Tensor real = party.table.index_select(0, indices);
    const torch::Tensor slice = fake.narrow(1, party.offset, real.size(1));
    const torch::Tensor hr = party.feat->forward(real);
    const torch::Tensor hf = party.feat->forward(slice);
    h_real.push_back(hr);
    h_fake.push_back(hf);
    const torch::Tensor alpha = LocalGpAlphas(config_.sampling_secret(), party.name, b, step);
    total = total + CriticLoss(party.head->forward(hr), party.head->forward(hf)) +
            t.gp_lambda() * Penalty({party.feat.ptr(), party.head.ptr()}, real, slice, alpha);
  }
  const double weight = config_.model().experimental().shared_critic_weight();
  const int pack = config_.model().experimental().pack();
  const torch::Tensor hr_all = PackRows(ScaleGradient(torch::cat(h_real, 1), weight), pack);
  const torch::Tensor hf_all = PackRows(ScaleGradient(torch::cat(h_fake, 1), weight), pack);
  const torch::Tensor alpha_shared =
      torch::rand({hr_all.size(0), 1}, StreamGenerator(key, streams::kSharedGpAlpha, step));
  total = total + CriticLoss(shared_critic_->forward(hr_all), shared_critic_->forward(hf_all)) +
          t.gp_lambda() * Penalty({shared_critic_.ptr()}, hr_all, hf_all, alpha_shared);
  shared_optimizer_->zero_grad();
  for (Party& party : parties_) party.optimizer->zero_grad();
  total.backward();
  shared_optimizer_->step();
  for (Party& party : parties_) party.optimizer->step();
  return total.item<double>();
}

double ReferenceTrainer::GeneratorStep(int64_t round) {
  const v1::TrainingConfig& t = config_.training();
  const std::string key = CuratorStreamKey(t.seed());
  const torch::Tensor z =
      generator_->SampleLatent(t.batch_size(), StreamGenerator(key, streams::kGeneratorZ, round));
  const torch::Tensor fake =
      generator_->forward(z, StreamGenerator(key, streams::kGeneratorGumbel, round));
  std::vector<torch::Tensor> features;
  torch::Tensor loss = torch::zeros({});
  for (Party& party : parties_) {
    const torch::Tensor slice = fake.narrow(1, party.offset, party.data.encoder.width());
    const torch::Tensor h = party.feat->forward(slice);
    features.push_back(h);
    loss = loss - party.head->forward(h).mean();
    if (party.marginals.has_value())
      loss = loss + t.marginal_weight() *
                        party.marginals->Loss(slice, t.experimental().marginal_reverse_weight());
  }
  loss = loss - shared_critic_
                    ->forward(PackRows(
                        ScaleGradient(torch::cat(features, 1),
                                      config_.model().experimental().shared_critic_weight()),
                        config_.model().experimental().pack()))
                    .mean();
  if (independence_.has_value())
    loss = loss + t.experimental().cross_party_independence_weight() * independence_->Loss(fake);
  // Only G steps: gradients reach the critics' parameters too but are discarded.
  const std::vector<torch::Tensor> params = generator_->parameters();
  const std::vector<torch::Tensor> grads = torch::autograd::grad({loss}, params);
  for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i];
  generator_optimizer_->step();
  if (average_ != nullptr) average_->Update(generator_);
  return loss.item<double>();
}

absl::Status ReferenceTrainer::Train(const std::function<void(const RoundStats&)>& progress) {
  const v1::TrainingConfig& t = config_.training();
  const auto start = std::chrono::steady_clock::now();
  generator_->train();
  RoundStats stats;
  stats.total_rounds = t.rounds();
  try {
    for (int round = 0; round < t.rounds(); ++round) {
      for (int c = 0; c < t.n_critic(); ++c) {
        stats.critic_loss = CriticStep(static_cast<int64_t>(round) * t.n_critic() + c);
      }
      stats.generator_loss = GeneratorStep(round);
      stats.round = round + 1;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      stats.rounds_per_second = stats.round / std::max(elapsed, 1e-9);
      stats.eta_seconds = (t.rounds() - stats.round) / std::max(stats.rounds_per_second, 1e-9);
      if (!std::isfinite(stats.critic_loss) || !std::isfinite(stats.generator_loss)) {
        return absl::InternalError(
            absl::StrCat("training diverged at round ", stats.round, ": non-finite loss"));
      }
      if (stats.round % t.log_every() == 0 || stats.round == t.rounds()) {
        spdlog::info(
            "round {}/{} critic_loss={:.4f} generator_loss={:.4f} rounds/s={:.2f} eta={:.0f}s",
            stats.round, t.rounds(), stats.critic_loss, stats.generator_loss,
            stats.rounds_per_second, stats.eta_seconds);
      }
      if (progress) progress(stats);
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("LibTorch error during training: ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

absl::StatusOr<CsvTable> ReferenceTrainer::Synthesize(int64_t rows) {
  if (rows <= 0) return absl::InvalidArgumentError("number of synthetic rows must be > 0");
  try {
    std::vector<const TableEncoder*> encoders;
    for (const Party& party : parties_) encoders.push_back(&party.data.encoder);
    return SampleSyntheticTable(average_ != nullptr ? average_->average() : generator_,
                                config_.training().seed(), rows, encoders,
                                publication_temperature_);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("LibTorch error during synthesis: ", e.what_without_backtrace()));
  }
}

}  // namespace vfsynth
