#include "server/core/vertical_rounds.h"

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <limits>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/model_state.h"
#include "common/config/config.h"
#include "common/data/schema.h"
#include "common/dp/dp_sgd.h"
#include "common/gan/curator_model.h"
#include "common/gan/model_factory.h"
#include "common/nn/torch_boundary.h"
#include "common/nn/wire_tensor.h"
#include "common/privacy/mode_traits.h"
#include "common/privacy/noise_figure.h"
#include "common/privacy/privacy_plan.h"
#include "common/privacy/run_accounting.h"
#include "common/protocol/tensor_codec.h"
#include "common/random/secure_random.h"
#include "server/core/curator_checkpoint.h"

namespace vfsynth {
namespace {

absl::StatusOr<SavedState> SaveModel(CuratorModel& model) {
  SavedState state;
  ASSIGN_OR_RETURN(state.checkpoint, SaveCuratorState(model));
  ASSIGN_OR_RETURN(state.generator, SavePublishedGenerator(model));
  return state;
}

}  // namespace

VerticalRounds::VerticalRounds(const v1::CuratorConfig& config)
    : config_(config),
      psi_({config.parties().begin(), config.parties().end()}),
      released_({config.parties().begin(), config.parties().end()},
                MarginalOptionsFor(config.training())) {}

VerticalRounds::~VerticalRounds() = default;

void VerticalRounds::Bind(CuratorRun* run) {
  run_ = run;
  inbox_ = std::make_unique<PartyInbox>(
      *run, [this](const v1::PartyMessage& message) { return PositionOf(message); });
}

absl::Status VerticalRounds::CheckAlign(int party, const v1::AlignRequest& request,
                                        const v1::RegisterRequest& registration) const {
  return CheckAlignRows(run_->roster[party], request, registration);
}

absl::StatusOr<v1::AlignResponse> VerticalRounds::Align(int party,
                                                        const v1::AlignRequest& request) {
  return psi_.Submit(party, request, run_->join);
}

absl::Status VerticalRounds::AcceptRecords(int64_t records) {
  const v1::TrainingConfig& t = config_.training();
  if (records < t.batch_size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("only ", records, " records are held by every party; batch_size ",
                     t.batch_size(), " needs at least that many"));
  }
  spdlog::info("aligned {} records held by all {} parties", records, run_->roster.size());
  if (!t.label_column().empty()) {
    absl::MutexLock lock(&mu_);
    label_exchange_ = LabelPairExchange::Create(t.label_column(), run_->registry.Encoders(),
                                                run_->roster, records);
  }
  return absl::OkStatus();
}

std::string VerticalRounds::DescribeWaiting() const {
  return absl::StrCat("join timeout: parties that did not register and align: ",
                      absl::StrJoin(psi_.Waiting(), ", "));
}

absl::StatusOr<LabelPairExchange*> VerticalRounds::label_exchange() {
  absl::MutexLock lock(&mu_);
  if (!label_exchange_.has_value()) {
    return absl::FailedPreconditionError(
        config_.training().label_column().empty()
            ? "this run releases no label pairs (training.label_column is unset)"
            : "label pairs start after alignment");
  }
  if (!label_exchange_->ok()) return label_exchange_->status();
  return label_exchange_->value().get();
}

absl::StatusOr<v1::ShareLabelsResponse> VerticalRounds::ShareLabels(
    int party, const v1::ShareLabelsRequest& request) {
  ASSIGN_OR_RETURN(LabelPairExchange* const exchange, label_exchange());
  return run_->join.Until(
      [&](absl::Time deadline) { return exchange->ShareLabels(party, request, deadline); });
}

absl::Status VerticalRounds::ReleaseLabelPairs(int party, const v1::LabelPairsRequest& request) {
  ASSIGN_OR_RETURN(LabelPairExchange* const exchange, label_exchange());
  return exchange->ReleasePairs(party, request);
}

absl::Status VerticalRounds::ReleaseMarginals(int party, const v1::MarginalsRequest& request) {
  if (config_.training().marginal_weight() <= 0) {
    return CuratorProtocol::ReleaseMarginals(party, request);
  }
  const TableEncoder* const encoder = run_->registry.Encoder(party);
  if (encoder == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", run_->roster[party], "' released marginals before it registered"));
  }
  return released_.AddMarginals(party, *encoder, request);
}

absl::StatusOr<v1::PrivacyPlan> VerticalRounds::Plan(int64_t records) {
  {
    absl::MutexLock lock(&mu_);
    if (label_exchange_.has_value() && !label_exchange_->ok()) return label_exchange_->status();
  }
  publishes_critic_loss_ = privacy::SharedCriticSeesOnlyReleases(config_.privacy().mode());
  // Settings the registered schemas cannot serve (a label column no party holds as a
  // category) fail here, before the plan is attested and so before any release.
  RETURN_IF_ERROR(CheckOutputFitsSchemas());
  return ResolvePrivacyPlan(config_.privacy(), config_.training(),
                            static_cast<int>(run_->roster.size()), records);
}

void VerticalRounds::LogPlan(const v1::PrivacyPlan& plan, const std::string& digest) const {
  const privacy::Mode mode = config_.privacy().mode();
  if (!privacy::TraitsOf(mode).draws_noise()) return;
  spdlog::info("privacy {}: noise multiplier {:.4f}{}, plan {}", privacy::ModeName(mode),
               plan.noise_multiplier(),
               privacy::DescribeReleaseNoise(mode, plan.noise_multiplier(), PlanShape(plan)),
               digest.substr(0, 16));
  if (const std::string breakdown = DescribeEpsilonBreakdown(plan); !breakdown.empty()) {
    spdlog::info("privacy {}: {}", privacy::ModeName(mode), breakdown);
  }
}

absl::Status VerticalRounds::CheckOutputFitsSchemas() {
  const std::vector<const TableEncoder*> encoders = run_->registry.Encoders();
  absl::MutexLock model_lock(&model_mu_);
  ASSIGN_OR_RETURN(publication_temperature_, PublicationTemperatures(config_.output(), encoders));
  return CheckConditionedColumn(config_.model(), encoders);
}

absl::Status VerticalRounds::LoadOrDrawNoiseKey() {
  ASSIGN_OR_RETURN(noise_key_,
                   ResumeOrNewHexSecret(run_->resume, NoiseKeyPath(config_),
                                        "it holds the key of D_s's DP noise, without which "
                                        "replayed steps would release new noise"));
  if (run_->resume) return absl::OkStatus();
  RETURN_IF_ERROR(MakeDirectories(config_.checkpoint_dir()));
  return WritePrivateFile(NoiseKeyPath(config_), noise_key_);
}

absl::Status VerticalRounds::Prepare(const v1::PrivacyPlan& plan) {
  plan_ = plan;
  const v1::TrainingConfig& t = config_.training();
  const std::vector<const TableEncoder*> encoders = run_->registry.Encoders();
  {
    absl::MutexLock model_lock(&model_mu_);
    model_ = std::make_unique<CuratorModel>(config_.model(), t, encoders);
    snapshot_model_ = std::make_unique<CuratorModel>(config_.model(), t, encoders);
    if (privacy::TraitsOf(config_.privacy().mode()).curator_releases_per_step > 0) {
      RETURN_IF_ERROR(LoadOrDrawNoiseKey());
      const double z = plan_.shared_critic_noise_multiplier();
      model_->SetSharedCriticPrivacy(z, config_.privacy().clip_norm(), noise_key_);
      // Only holds the live model's state, copied at each round's end; it never steps.
      snapshot_model_->SetSharedCriticPrivacy(z, config_.privacy().clip_norm(), noise_key_);
      // No warning: the parties' threshold does not carry over to D_s, whose figure is
      // 5.6 in the best DP tables measured (ε = 10 over 10000 rounds).
      const int64_t parameters = model_->shared_critic_parameters();
      LogPlannedCriticNoise("dpsgd", "shared critic D_s",
                            MeanGradientNoiseToClip(z, parameters, t.batch_size()), parameters,
                            t.batch_size(), std::numeric_limits<double>::infinity());
    }
  }
  if (t.label_column().empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(LabelPairExchange* const exchange, label_exchange());
  ASSIGN_OR_RETURN(MarginalTarget target, run_->join.Until([exchange](absl::Time deadline) { return exchange->AwaitTarget(deadline); }));
  spdlog::info(
      "label pairs: G's target holds '{}' against {} blocks of the other parties, weight {}",
      t.label_column(), target.pairs(), t.experimental().label_pair_weight());
  released_.SetLabelPairs(target, exchange->holder(), t.label_column());
  absl::MutexLock model_lock(&model_mu_);
  model_->SetLabelPairTarget(std::move(target), t.experimental().label_pair_weight());
  return absl::OkStatus();
}

absl::StatusOr<SavedState> VerticalRounds::Save() {
  absl::MutexLock model_lock(&model_mu_);
  return SaveModel(*model_);
}

absl::Status VerticalRounds::Restore(const std::string& payload) {
  absl::MutexLock model_lock(&model_mu_);
  return RestoreCuratorState(payload, *model_);
}

absl::Status VerticalRounds::Train(int64_t first_round) {
  const v1::TrainingConfig& t = config_.training();
  spdlog::info("training {} rounds: batch {}, n_critic {}, {} parties", t.rounds(), t.batch_size(),
               t.n_critic(), run_->roster.size());
  for (int64_t round = first_round; round < t.rounds(); ++round) {
    run_->hub.BeginRound();
    for (int c = 0; c < t.n_critic(); ++c) {
      RETURN_IF_ERROR(CriticStep(round, round * t.n_critic() + c, c == 0, c + 1 == t.n_critic()));
    }
    RETURN_IF_ERROR(GeneratorStep(round));
    RETURN_IF_ERROR(AfterRound(round + 1));
    const RunStatus::Progress progress = run_->status.CompleteRound(round + 1);
    if (!progress.due) continue;
    int64_t wire = 0;
    for (size_t k = 0; k < run_->roster.size(); ++k) {
      wire +=
          run_->hub.bytes_sent(static_cast<int>(k)) + run_->hub.bytes_received(static_cast<int>(k));
    }
    // The log shows only what status may: D_s's loss where it sees released features alone.
    spdlog::info("round {}/{}{}{} rounds/s={:.2f} eta={:.0f}s wire={:.1f} MiB", round + 1,
                 t.rounds(),
                 publishes_critic_loss_ ? absl::StrFormat(" critic_loss=%.4f", last_critic_loss_)
                                        : "",
                 progress.epsilon_spent.has_value()
                     ? absl::StrFormat(" epsilon=%.3f", *progress.epsilon_spent)
                     : "",
                 progress.rounds_per_second, progress.eta_seconds, wire / 1048576.0);
  }
  return absl::OkStatus();
}

std::optional<ReplyPosition> VerticalRounds::PositionOf(const v1::PartyMessage& message) const {
  const int64_t n = config_.training().n_critic();
  switch (message.payload_case()) {
    case v1::PartyMessage::kFeatures: {
      const int64_t c = message.step() - message.round() * n;
      if (c < 0 || c >= n) return std::nullopt;
      return ReplyPosition{message.round(), c};
    }
    case v1::PartyMessage::kGeneratorFeatures:
      return ReplyPosition{message.round(), n};
    case v1::PartyMessage::kSliceGradient:
      return ReplyPosition{message.round(), n + 1};
    default:
      return std::nullopt;
  }
}

absl::Status VerticalRounds::CheckTensor(const v1::Tensor& tensor, int64_t cols,
                                         const std::string& name) const {
  return ValidateTensor(tensor, {config_.training().batch_size(), cols}, name,
                        config_.max_message_bytes());
}

absl::StatusOr<v1::PartyMessage> VerticalRounds::Expect(int party,
                                                        v1::PartyMessage::PayloadCase expected,
                                                        int64_t round, int64_t step) {
  const int64_t d_h = config_.model().feature_dim();
  return inbox_->Expect(
      party, expected, round, step, [&](const v1::PartyMessage& message) -> absl::Status {
        switch (message.payload_case()) {
          case v1::PartyMessage::kFeatures:
            RETURN_IF_ERROR(CheckTensor(message.features().h_real(), d_h, "features.h_real"));
            return CheckTensor(message.features().h_fake(), d_h, "features.h_fake");
          case v1::PartyMessage::kGeneratorFeatures:
            return CheckTensor(message.generator_features().h(), d_h, "generator_features.h");
          case v1::PartyMessage::kSliceGradient:
            return CheckTensor(message.slice_gradient().grad(),
                               run_->registry.Encoder(party)->width(), "slice_gradient.grad");
          default:
            return absl::InvalidArgumentError("not a message of the vertical rounds");
        }
      });
}

void VerticalRounds::SendTasks(int64_t round, int64_t step, const std::vector<at::Tensor>& slices) {
  ScopedPhase codec(run_->profile, StepPhase::kCodec);
  for (size_t k = 0; k < run_->roster.size(); ++k) {
    v1::CuratorMessage message = inbox_->Envelope(round, step);
    v1::Tensor* slice = step >= 0 ? message.mutable_critic_task()->mutable_fake_slice()
                                  : message.mutable_generator_task()->mutable_fake_slice();
    ToWire(slices[k], slice);
    run_->hub.Send(static_cast<int>(k), std::move(message));
  }
}

absl::Status VerticalRounds::CriticStep(int64_t round, int64_t step, bool first, bool last) {
  absl::MutexLock model_lock(&model_mu_);
  CuratorModel* const model = model_.get();  // the lambdas below run under model_mu_
  StepProfile& profile = run_->profile;
  ScopedStep timing(profile, v1::STEP_CRITIC, step);
  if (first) {
    SendTasks(round, step,
              Timed(profile, StepPhase::kCompute, [&] { return model->CriticSlices(step); }));
  }
  std::vector<torch::Tensor> h_real, h_fake;
  for (size_t k = 0; k < run_->roster.size(); ++k) {
    ASSIGN_OR_RETURN(const v1::PartyMessage reply,
                     Expect(static_cast<int>(k), v1::PartyMessage::kFeatures, round, step));
    ScopedPhase codec(profile, StepPhase::kCodec);
    h_real.push_back(FromWire(reply.features().h_real()));
    h_fake.push_back(FromWire(reply.features().h_fake()));
  }
  // The next tasks' slices depend on G only, which this step leaves alone: they are
  // computed on a helper thread beside D_s's forward pass and sent right after the
  // feature gradients. Same operations in the same order on G as one thread would run:
  // the same bytes.
  std::vector<torch::Tensor> next;
  // Joined before `next` goes, on every path out of this step.
  absl::Cleanup join_slicer = [this] { slicer_.Await().IgnoreError(); };
  RETURN_IF_ERROR(slicer_.Start([&next, model, round, step, last]() -> absl::Status {
    // The owner's LibTorch thread count, not OpenMP's default (every core): with it,
    // OpenBLAS split G's larger products over an OpenMP team of its own on this
    // thread (CPU the parties' work needed, and other rounding than one thread's).
    at::init_num_threads();
    return CatchLibTorch([&]() -> absl::Status {
      next = last ? model->GeneratorSlices(round) : model->CriticSlices(step + 1);
      return absl::OkStatus();
    });
  }));
  ASSIGN_OR_RETURN(const CuratorModel::FeatureGradients gradients,
                   Timed(profile, StepPhase::kCompute,
                         [&] { return model->SharedFeatureGradients(step, h_real, h_fake); }));
  // The feature gradients leave now (the parties' updates need only them), the next
  // tasks as soon as the slicer is done: D_s's own update below overlaps the parties'.
  {
    ScopedPhase codec(profile, StepPhase::kCodec);
    for (size_t k = 0; k < run_->roster.size(); ++k) {
      v1::CuratorMessage message = inbox_->Envelope(round, step);
      ToWire(gradients.real[k], message.mutable_feature_gradients()->mutable_grad_real());
      ToWire(gradients.fake[k], message.mutable_feature_gradients()->mutable_grad_fake());
      run_->hub.Send(static_cast<int>(k), std::move(message));
    }
  }
  RETURN_IF_ERROR(Timed(profile, StepPhase::kCompute, [&] { return slicer_.Await(); }));
  SendTasks(round, last ? -1 : step + 1, next);
  ASSIGN_OR_RETURN(const double loss,
                   Timed(profile, StepPhase::kCompute, [&] { return model->StepSharedCritic(); }));
  // Outside the modes where D_s sees only released features, its loss is computed on
  // clean real features: neither status nor the log shows it.
  if (publishes_critic_loss_) {
    last_critic_loss_ = loss;
    run_->status.SetCriticLoss(loss);
  }
  return absl::OkStatus();
}

absl::Status VerticalRounds::GeneratorStep(int64_t round) {
  absl::MutexLock model_lock(&model_mu_);
  CuratorModel* const model = model_.get();  // the lambdas below run under model_mu_
  StepProfile& profile = run_->profile;
  ScopedStep timing(profile, v1::STEP_GENERATOR, round);
  // Its tasks were sent by the round's last critic step.
  std::vector<torch::Tensor> features;
  for (size_t k = 0; k < run_->roster.size(); ++k) {
    ASSIGN_OR_RETURN(const v1::PartyMessage reply,
                     Expect(static_cast<int>(k), v1::PartyMessage::kGeneratorFeatures, round, -1));
    ScopedPhase codec(profile, StepPhase::kCodec);
    features.push_back(FromWire(reply.generator_features().h()));
  }
  const std::vector<torch::Tensor> grads = Timed(
      profile, StepPhase::kCompute, [&] { return model->SharedGeneratorGradients(features); });
  if (publishes_critic_loss_) run_->status.SetGeneratorLoss(model->shared_generator_loss());
  {
    ScopedPhase codec(profile, StepPhase::kCodec);
    for (size_t k = 0; k < run_->roster.size(); ++k) {
      v1::CuratorMessage message = inbox_->Envelope(round, -1);
      ToWire(grads[k], message.mutable_generator_feature_gradient()->mutable_grad());
      run_->hub.Send(static_cast<int>(k), std::move(message));
    }
  }
  std::vector<torch::Tensor> slice_grads;
  for (size_t k = 0; k < run_->roster.size(); ++k) {
    ASSIGN_OR_RETURN(const v1::PartyMessage reply,
                     Expect(static_cast<int>(k), v1::PartyMessage::kSliceGradient, round, -1));
    ScopedPhase codec(profile, StepPhase::kCodec);
    slice_grads.push_back(FromWire(reply.slice_gradient().grad()));
  }
  return Timed(profile, StepPhase::kCompute,
               [&] { return model->GeneratorStep(round, slice_grads); });
}

absl::Status VerticalRounds::AfterRound(int64_t next_round) {
  ScopedStep timing(run_->profile, v1::STEP_CHECKPOINT, next_round);
  ScopedPhase durability(run_->profile, StepPhase::kDurability);
  // The previous round's job is done with the copy.
  RETURN_IF_ERROR(run_->checkpoints.Await());
  {
    // A copy, not the serialization (2-3 ms per round at VFLGAN's sizes): that runs in
    // the job, off the rounds' critical path.
    absl::MutexLock model_lock(&model_mu_);
    RETURN_IF_ERROR(CopyCuratorState(*model_, *snapshot_model_));
  }
  // Serialized and written while the next round runs; parties learn the new durable
  // round only once it is on disk.
  return run_->checkpoints.WriteInBackground(
      next_round, run_->checkpoints.Due(next_round, config_.training().rounds()),
      [this] { return SaveModel(*snapshot_model_); });
}

absl::StatusOr<CsvTable> VerticalRounds::Sample(int64_t rows) {
  const std::vector<const TableEncoder*> encoders = run_->registry.Encoders();
  absl::MutexLock model_lock(&model_mu_);
  if (model_ == nullptr) return absl::FailedPreconditionError("training has not started");
  at::init_num_threads();  // a Sample call may run on a gRPC thread: the configured count
  return SampleSyntheticTable(model_->published_generator(), config_.training().seed(), rows,
                              encoders, publication_temperature_);
}

absl::StatusOr<std::optional<v1::ReleasedFidelity>> VerticalRounds::ReleasedReport(
    const CsvTable& published, const v1::PrivacyPlan& plan) const {
  return released_.Report(published, run_->registry.Encoders(), plan);
}

void VerticalRounds::Cancel(const absl::Status& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (label_exchange_.has_value() && label_exchange_->ok())
      label_exchange_->value()->Cancel(reason);
  }
  psi_.Cancel(reason);
}

}  // namespace vfsynth
