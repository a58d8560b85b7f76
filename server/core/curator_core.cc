#include "server/core/curator_core.h"

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/checkpoint_file.h"
#include "common/checkpoint/model_state.h"
#include "common/config/config.h"
#include "common/data/schema.h"
#include "common/gan/curator_model.h"
#include "common/gan/model_factory.h"
#include "common/nn/intra_op_threads.h"
#include "common/nn/wire_tensor.h"
#include "common/privacy/dp_sgd.h"
#include "common/privacy/noise_figure.h"
#include "common/privacy/privacy_plan.h"
#include "common/privacy/run_accounting.h"
#include "common/privacy/secure_random.h"
#include "common/protocol/tensor_codec.h"
#include "server/core/curator_checkpoint.h"
#include "server/core/generator_artefact.h"
#include "server/core/horizontal_model.h"

namespace vfsynth {
namespace {

std::vector<std::string> Roster(const v1::CuratorConfig& config) {
  return {config.parties().begin(), config.parties().end()};
}

}  // namespace

CuratorCore::CuratorCore(v1::CuratorConfig config, bool resume)
    : config_(std::move(config)),
      resume_(resume),
      roster_(Roster(config_)),
      hub_(roster_),
      psi_(roster_),
      released_(roster_, MarginalOptionsFor(config_.training())),
      // Resuming, the parties only have to come back, not to be started.
      join_deadline_(absl::Now() +
                     absl::Seconds(resume ? config_.reconnect_timeout_seconds() : config_.join_timeout_seconds())) {
  consumed_.assign(roster_.size(), -1);
  registrations_.resize(roster_.size());
  encoders_.resize(roster_.size());
  attested_.assign(roster_.size(), false);
  joined_.assign(roster_.size(), false);
  asked_.assign(roster_.size(), 0);
  status_.set_run_id(config_.run_id());
  status_.set_privacy_mode(config_.privacy().mode());
  status_.set_delta(config_.privacy().delta());
  status_.set_state("waiting");
  status_.set_total_rounds(config_.training().rounds());
}

CuratorCore::~CuratorCore() = default;

absl::StatusOr<v1::RegisterResponse> CuratorCore::Register(const std::string& party,
                                                          const v1::RegisterRequest& request) {
  const int index = hub_.Index(party);
  if (index < 0) return absl::PermissionDeniedError(absl::StrCat("'", party, "' is not in the roster"));
  if (request.protocol_version() != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrCat("party speaks protocol version ",
                                                      request.protocol_version(),
                                                      ", this curator speaks ", kProtocolVersion));
  }
  if (request.topology() != config_.topology()) {
    return absl::FailedPreconditionError(absl::StrCat("party '", party, "' is configured for topology '",
                                                      v1::Topology_Name(request.topology()), "' but this run is '",
                                                      v1::Topology_Name(config_.topology()), "'"));
  }
  if (request.privacy().mode() != config_.privacy().mode()) {
    return absl::FailedPreconditionError(
        absl::StrCat("party '", party, "' declares privacy mode '", privacy::ModeName(request.privacy().mode()),
                     "' but this run uses '", privacy::ModeName(config_.privacy().mode()), "'"));
  }
  const double share = config_.privacy().experimental().shared_critic_budget_share();
  if (request.privacy().shared_critic_budget_share() != share) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", party, "' splits each step's privacy with shared_critic_budget_share ",
        request.privacy().shared_critic_budget_share(), " but this run uses ", share,
        " (the joint epsilon assumes one split: set privacy.experimental.shared_critic_budget_share alike)"));
  }
  auto encoder = TableEncoder::Create(request.schema());
  if (!encoder.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("schema of '", party, "': ", encoder.status().message()));
  }
  absl::MutexLock lock(&mu_);
  if (!cancelled_.ok()) return cancelled_;
  if (horizontal()) {
    if (request.users() < 1 || request.users() > request.rows()) {
      return absl::InvalidArgumentError(
          absl::StrCat("party '", party, "' registers ", request.users(), " users over ", request.rows(), " rows"));
    }
    RETURN_IF_ERROR(CheckSameSchema(index, request.schema()));
  }
  auto& existing = registrations_[index];
  if (existing.has_value()) {
    if (existing->schema().SerializeAsString() != request.schema().SerializeAsString()) {
      return absl::FailedPreconditionError(
          absl::StrCat("party '", party, "' registered again with a different schema"));
    }
  } else {
    existing = request;
    encoders_[index] = std::make_unique<TableEncoder>(std::move(*encoder));
    spdlog::info("party {} registered: {} columns, {} encoded, {} records", party,
                 request.schema().columns_size(), encoders_[index]->width(), request.rows());
  }
  v1::RegisterResponse response;
  response.set_run_id(config_.run_id());
  response.set_protocol_version(kProtocolVersion);
  *response.mutable_model() = config_.model();
  *response.mutable_training() = config_.training();
  for (const std::string& name : roster_) response.add_parties(name);
  response.set_topology(config_.topology());
  if (horizontal()) *response.mutable_horizontal() = config_.horizontal();
  return response;
}

absl::StatusOr<v1::AlignResponse> CuratorCore::Align(const std::string& party,
                                                    const v1::AlignRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  {
    absl::MutexLock lock(&mu_);
    if (!cancelled_.ok()) return cancelled_;
    if (!registrations_[index].has_value()) {
      return absl::FailedPreconditionError(absl::StrCat("party '", party, "' must Register before Align"));
    }
    if (horizontal() && (request.hop() != 0 || request.elements_size() > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("party '", party, "' sent alignment elements to a horizontal run"));
    }
    if (!horizontal() && request.hop() == 0 && request.elements_size() != registrations_[index]->rows()) {
      return absl::InvalidArgumentError(absl::StrCat("party '", party, "' registered ",
                                                     registrations_[index]->rows(), " records but its alignment list has ",
                                                     request.elements_size()));
    }
    if (status_.state() == "waiting") status_.set_state("aligning");  // not when a party rejoins
  }
  if (horizontal()) return JoinHorizontal(index);
  ASSIGN_OR_RETURN(v1::AlignResponse response, psi_.Submit(index, request, join_deadline_));
  if (!response.has_aligned()) return response;
  absl::MutexLock lock(&mu_);
  if (!intersection_size_.has_value()) AcceptIntersection(response.aligned().records());
  if (!intersection_size_->ok()) return intersection_size_->status();
  return response;
}

void CuratorCore::AcceptIntersection(int64_t records) {
  if (records < config_.training().batch_size()) {
    intersection_size_ = absl::FailedPreconditionError(absl::StrCat(
        "only ", records, " records are held by every party; batch_size ", config_.training().batch_size(),
        " needs at least that many"));
    return;
  }
  spdlog::info("aligned {} records held by all {} parties", records, roster_.size());
  status_.set_aligned_records(records);
  if (!config_.training().label_column().empty()) {
    std::vector<const TableEncoder*> encoders;
    for (const auto& encoder : encoders_) encoders.push_back(encoder.get());
    label_exchange_ = LabelPairExchange::Create(config_.training().label_column(), std::move(encoders), roster_, records);
  }
  intersection_size_ = records;
}

absl::StatusOr<LabelPairExchange*> CuratorCore::label_exchange() {
  absl::MutexLock lock(&mu_);
  if (!label_exchange_.has_value()) {
    return absl::FailedPreconditionError(config_.training().label_column().empty()
                                             ? "this run releases no label pairs (training.label_column is unset)"
                                             : "label pairs start after alignment");
  }
  if (!label_exchange_->ok()) return label_exchange_->status();
  return label_exchange_->value().get();
}

absl::StatusOr<int> CuratorCore::RosterIndex(const std::string& party, const std::string& run_id) const {
  const int index = hub_.Index(party);
  if (index < 0) return absl::PermissionDeniedError(absl::StrCat("'", party, "' is not in the roster"));
  if (run_id != config_.run_id()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run id '", run_id, "' does not match this run '", config_.run_id(), "'"));
  }
  return index;
}

absl::StatusOr<v1::ShareLabelsResponse> CuratorCore::ShareLabels(const std::string& party,
                                                                 const v1::ShareLabelsRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  ASSIGN_OR_RETURN(LabelPairExchange* const exchange, label_exchange());
  return exchange->ShareLabels(index, request, join_deadline_);
}

absl::StatusOr<v1::LabelPairsResponse> CuratorCore::ReleaseLabelPairs(const std::string& party,
                                                                      const v1::LabelPairsRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  ASSIGN_OR_RETURN(LabelPairExchange* const exchange, label_exchange());
  RETURN_IF_ERROR(exchange->ReleasePairs(index, request));
  return v1::LabelPairsResponse();
}

absl::StatusOr<v1::MarginalsResponse> CuratorCore::ReleaseMarginals(const std::string& party,
                                                                    const v1::MarginalsRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  if (horizontal() || config_.training().marginal_weight() <= 0) {
    return absl::FailedPreconditionError("this run has no marginal release (training.marginal_weight is 0)");
  }
  const TableEncoder* const encoder = Encoders()[index];
  if (encoder == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("'", party, "' released marginals before it registered"));
  }
  RETURN_IF_ERROR(released_.AddMarginals(index, *encoder, request));
  return v1::MarginalsResponse();
}

absl::Status CuratorCore::WaitForParties() {
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return !cancelled_.ok() || intersection_size_.has_value();
    };
    mu_.AwaitWithDeadline(absl::Condition(&ready), join_deadline_);
    if (!cancelled_.ok()) return cancelled_;
    if (!intersection_size_.has_value()) {
      const std::vector<std::string> waiting = horizontal() ? NotJoined() : psi_.Waiting();
      return absl::DeadlineExceededError(absl::StrCat("join timeout: parties that did not register and ",
                                                      horizontal() ? "join" : "align", ": ",
                                                      absl::StrJoin(waiting, ", ")));
    }
    if (!intersection_size_->ok()) return intersection_size_->status();
    if (label_exchange_.has_value() && !label_exchange_->ok()) return label_exchange_->status();
  }
  int64_t records = 0;
  {
    absl::MutexLock lock(&mu_);
    records = status_.aligned_records();
  }
  RETURN_IF_ERROR(PlanPrivacy(records));
  return hub_.WaitAllConnected(join_deadline_);
}

absl::Status CuratorCore::PlanPrivacy(int64_t records) {
  const v1::PrivacyConfig& p = config_.privacy();
  const privacy::Mode mode = p.mode();
  publishes_critic_loss_ = privacy::SharedCriticSeesOnlyReleases(mode);
  const int parties = static_cast<int>(roster_.size());
  absl::StatusOr<v1::PrivacyPlan> plan;
  if (horizontal()) {
    plan = ResolveHorizontalPlan(p, config_.horizontal(), config_.training(), parties, records);
  } else {
    // Settings the registered schemas cannot serve (a label column no party holds as a
    // category) fail here, before the plan is attested and so before any release.
    const absl::Status fits = CheckOutputFitsSchemas();
    plan = fits.ok() ? ResolvePrivacyPlan(p, config_.training(), parties, records) : fits;
  }
  if (plan.ok()) {
    if (absl::Status budgets = CheckPlanBudgets(*plan); !budgets.ok()) plan = budgets;
  }
  absl::MutexLock lock(&mu_);
  plan_ = plan;
  if (!plan.ok()) return plan.status();
  privacy_plan_ = *plan;
  status_.set_plan_digest(PlanDigest(*plan));
  *status_.mutable_guarantees() = plan->guarantees();
  const v1::ObserverGuarantee& published = Guarantee(*plan, Observer::kPublished);
  if (published.has_epsilon_planned()) status_.set_epsilon_planned(published.epsilon_planned());
  UpdateEpsilonSpent(0);
  status_.set_total_rounds(plan->rounds());
  if (mode == v1::PrivacyConfig::signds) {
    spdlog::info("privacy signds: epsilon {} per user over at most {} answer(s), {} rounds of {} users, plan {}",
                 p.epsilon(), config_.horizontal().participation_cap(), plan->rounds(),
                 config_.horizontal().users_per_round(), status_.plan_digest().substr(0, 16));
  } else if (mode == v1::PrivacyConfig::dpfedavg) {
    spdlog::info("privacy dpfedavg: {} rounds, each user drawn at rate {:.4g}, noise multiplier {:.4f}, plan {}",
                 plan->rounds(), DpFedAvgMechanism(*plan).sample_rate, plan->noise_multiplier(),
                 status_.plan_digest().substr(0, 16));
  } else if (mode != v1::PrivacyConfig::none) {
    spdlog::info("privacy {}: noise multiplier {:.4f}{}, plan {}", privacy::ModeName(mode), plan->noise_multiplier(),
                 privacy::DescribeReleaseNoise(mode, plan->noise_multiplier(), PlanShape(*plan)),
                 status_.plan_digest().substr(0, 16));
    if (const std::string breakdown = DescribeEpsilonBreakdown(*plan); !breakdown.empty()) {
      spdlog::info("privacy {}: {}", privacy::ModeName(mode), breakdown);
    }
  }
  for (const v1::ObserverGuarantee& guarantee : plan->guarantees()) {
    spdlog::info("privacy {}: against {}", privacy::ModeName(mode), DescribeGuarantee(guarantee, p.delta()));
  }
  return absl::OkStatus();
}

std::vector<const TableEncoder*> CuratorCore::Encoders() const {
  absl::MutexLock lock(&mu_);
  std::vector<const TableEncoder*> encoders;
  for (const auto& encoder : encoders_) encoders.push_back(encoder.get());
  return encoders;
}

absl::Status CuratorCore::CheckOutputFitsSchemas() {
  const std::vector<const TableEncoder*> encoders = Encoders();
  absl::MutexLock model_lock(&model_mu_);  // taken before mu_, never inside it
  ASSIGN_OR_RETURN(publication_temperature_, PublicationTemperatures(config_.output(), encoders));
  return CheckConditionedColumn(config_.model(), encoders);
}

void CuratorCore::UpdateEpsilonSpent(int64_t rounds) {
  for (int i = 0; i < status_.guarantees_size(); ++i) {
    v1::ObserverGuarantee* guarantee = status_.mutable_guarantees(i);
    if (!guarantee->has_epsilon_planned()) continue;
    auto spent = EpsilonAfter(privacy_plan_, kObservers[i], rounds);
    // The plan computed the whole run's figure; fewer rounds cannot fail where it did not.
    if (spent.ok() && spent->has_value()) guarantee->set_epsilon_spent(**spent);
  }
  const v1::ObserverGuarantee& published = status_.guarantees(static_cast<int>(Observer::kPublished));
  if (published.has_epsilon_spent()) status_.set_epsilon_spent(published.epsilon_spent());
  auto own = OwnReleasesEpsilonAfter(privacy_plan_, rounds);
  party_epsilon_spent_ = own.ok() ? *own : std::nullopt;
}

absl::StatusOr<v1::AttestPlanResponse> CuratorCore::AttestPlan(const std::string& party,
                                                              const v1::AttestPlanRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  if (!request.refusal().empty()) {
    return FailRun(
        absl::FailedPreconditionError(absl::StrCat("party '", party, "' refuses the run: ", request.refusal())));
  }
  absl::Status same;
  v1::AttestPlanResponse response;
  {
    absl::MutexLock lock(&mu_);
    auto planned = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !cancelled_.ok() || plan_.has_value(); };
    if (!mu_.AwaitWithDeadline(absl::Condition(&planned), join_deadline_)) {
      return absl::DeadlineExceededError("the curator had not planned the run's privacy before the join timeout");
    }
    if (!cancelled_.ok()) return cancelled_;
    if (!plan_->ok()) return plan_->status();
    same = CheckSamePlan(**plan_, "the curator", request.plan(), absl::StrCat("party '", party, "'"));
    if (same.ok()) {
      if (!attested_[index]) spdlog::info("party {} attested the privacy plan", party);
      attested_[index] = true;
      // Answer once every party's plan matched: a party answered earlier would charge its
      // ledger for a run that another party's plan then fails.
      auto all_attested = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !cancelled_.ok() || std::all_of(attested_.begin(), attested_.end(), [](bool a) { return a; });
      };
      if (!mu_.AwaitWithDeadline(absl::Condition(&all_attested), join_deadline_)) {
        return absl::DeadlineExceededError("not every party attested the privacy plan before the join timeout");
      }
      if (!cancelled_.ok()) return cancelled_;
      *response.mutable_plan() = **plan_;
      return response;
    }
  }
  // The run cannot go on: its joint epsilon would not hold.
  return FailRun(same);
}

absl::Status CuratorCore::FailRun(absl::Status reason) {
  spdlog::error("{}", std::string(reason.message()));
  Cancel(reason);
  return reason;
}

absl::Status CuratorCore::CheckAttested(const std::string& party) const {
  const int index = hub_.Index(party);
  absl::MutexLock lock(&mu_);
  if (index < 0 || !attested_[index]) {
    return absl::FailedPreconditionError(
        absl::StrCat("party '", party, "' opened Train before its privacy plan matched the curator's (AttestPlan)"));
  }
  return absl::OkStatus();
}

absl::Status CuratorCore::CheckTensor(const v1::Tensor& tensor, int64_t cols,
                                      const std::string& name) const {
  return ValidateTensor(tensor, {config_.training().batch_size(), cols}, name,
                        config_.max_message_bytes());
}

v1::CuratorMessage CuratorCore::Envelope(int64_t round, int64_t step) const {
  v1::CuratorMessage message;
  message.set_run_id(config_.run_id());
  message.set_round(round);
  message.set_step(step);
  message.set_durable_round(durable_round_.load());
  return message;
}

int64_t CuratorCore::ReplyOrdinal(const v1::PartyMessage& message) const {
  const int64_t n = config_.training().n_critic();
  const int64_t base = message.round() * (n + 2);
  switch (message.payload_case()) {
    case v1::PartyMessage::kFeatures: {
      const int64_t c = message.step() - message.round() * n;
      return c >= 0 && c < n ? base + c : -1;
    }
    case v1::PartyMessage::kGeneratorFeatures:
      return base + n;
    case v1::PartyMessage::kSliceGradient:
      return base + n + 1;
    case v1::PartyMessage::kSignDsReports:
    case v1::PartyMessage::kUpdateSum:
      return message.round();
    default:
      return -1;
  }
}

absl::StatusOr<v1::PartyMessage> CuratorCore::Expect(int party,
                                                     v1::PartyMessage::PayloadCase expected,
                                                     int64_t round, int64_t step) {
  absl::Time deadline = absl::Now() + absl::Seconds(config_.round_timeout_seconds());
  const int64_t d_h = config_.model().feature_dim();
  while (true) {
    absl::StatusOr<v1::PartyMessage> received =
        Timed(profile_, StepPhase::kWait, [&] { return hub_.Receive(party, deadline); });
    if (received.status().code() == absl::StatusCode::kUnavailable) {
      spdlog::warn("party {} disconnected; waiting up to {}s for it to rejoin", roster_[party],
                   config_.reconnect_timeout_seconds());
      RETURN_IF_ERROR(hub_.AwaitReconnect(
          party, absl::Now() + absl::Seconds(config_.reconnect_timeout_seconds())));
      deadline = absl::Now() + absl::Seconds(config_.round_timeout_seconds());
      continue;
    }
    if (!received.ok()) return received.status();
    v1::PartyMessage message = std::move(*received);
    const int64_t ordinal = ReplyOrdinal(message);
    if (ordinal >= 0 && ordinal <= consumed_[party] && message.run_id() == config_.run_id()) {
      // A rejoined party answering resent messages from its journal: already used.
      spdlog::debug("dropping {}'s repeated reply for round {}, step {}", roster_[party],
                    message.round(), message.step());
      continue;
    }
    if (message.has_error()) {
      return absl::AbortedError(absl::StrCat("party '", roster_[party], "' stopped: ",
                                             message.error().message()));
    }
    ScopedPhase validation(profile_, StepPhase::kCodec);
    absl::Status problem;
    if (message.run_id() != config_.run_id()) {
      problem = absl::InvalidArgumentError(absl::StrCat("run id '", message.run_id(), "' is not this run"));
    } else if (message.payload_case() != expected || message.round() != round ||
               message.step() != step) {
      problem = absl::InvalidArgumentError(absl::StrCat(
          "unexpected message (payload ", message.payload_case(), ", round ", message.round(),
          ", step ", message.step(), "); expected payload ", expected, " for round ", round,
          ", step ", step));
    } else if (expected == v1::PartyMessage::kFeatures) {
      problem = CheckTensor(message.features().h_real(), d_h, "features.h_real");
      if (problem.ok()) problem = CheckTensor(message.features().h_fake(), d_h, "features.h_fake");
    } else if (expected == v1::PartyMessage::kGeneratorFeatures) {
      problem = CheckTensor(message.generator_features().h(), d_h, "generator_features.h");
    } else if (expected == v1::PartyMessage::kSignDsReports) {
      problem = CheckSignDsReports(message.sign_ds_reports(), asked_[party], horizontal_parameters_);
    } else if (expected == v1::PartyMessage::kUpdateSum) {
      problem = ValidateTensor(message.update_sum().sum(), {horizontal_parameters_}, "update_sum.sum",
                               config_.max_message_bytes());
    } else if (expected == v1::PartyMessage::kSliceGradient) {
      absl::MutexLock lock(&mu_);
      problem = CheckTensor(message.slice_gradient().grad(), encoders_[party]->width(),
                            "slice_gradient.grad");
    }
    if (problem.ok()) {
      consumed_[party] = ordinal;
      return message;
    }
    spdlog::warn("rejected a message from {}: {}", roster_[party], problem.ToString());
    v1::CuratorMessage reply = Envelope(round, step);
    reply.mutable_error()->set_code(static_cast<int>(problem.code()));
    reply.mutable_error()->set_message(std::string(problem.message()));
    hub_.Send(party, std::move(reply));
    // Receive returns queued messages even past the deadline; without this a party
    // that keeps its inbox full of bad messages would never time out.
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "party '", roster_[party], "' sent no valid message within the round timeout"));
    }
  }
}

void CuratorCore::SendTasks(int64_t round, int64_t step, const std::vector<at::Tensor>& slices) {
  ScopedPhase codec(profile_, StepPhase::kCodec);
  for (size_t k = 0; k < roster_.size(); ++k) {
    v1::CuratorMessage message = Envelope(round, step);
    v1::Tensor* slice = step >= 0 ? message.mutable_critic_task()->mutable_fake_slice()
                                  : message.mutable_generator_task()->mutable_fake_slice();
    ToWire(slices[k], slice);
    hub_.Send(static_cast<int>(k), std::move(message));
  }
}

absl::Status CuratorCore::CriticStep(int64_t round, int64_t step, bool first, bool last) {
  absl::MutexLock model_lock(&model_mu_);
  CuratorModel* const model = model_.get();  // the lambdas below run under model_mu_
  ScopedStep timing(profile_, v1::STEP_CRITIC, step);
  if (first) {
    SendTasks(round, step, Timed(profile_, StepPhase::kCompute, [&] { return model->CriticSlices(step); }));
  }
  std::vector<torch::Tensor> h_real, h_fake;
  for (size_t k = 0; k < roster_.size(); ++k) {
    ASSIGN_OR_RETURN(const v1::PartyMessage reply,
                     Expect(static_cast<int>(k), v1::PartyMessage::kFeatures, round, step));
    ScopedPhase codec(profile_, StepPhase::kCodec);
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
    try {
      next = last ? model->GeneratorSlices(round) : model->CriticSlices(step + 1);
      return absl::OkStatus();
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("LibTorch error: ", e.what_without_backtrace()));
    }
  }));
  ASSIGN_OR_RETURN(const CuratorModel::FeatureGradients gradients, Timed(profile_, StepPhase::kCompute, [&] {
                     return model->SharedFeatureGradients(step, h_real, h_fake);
                   }));
  // The feature gradients leave now (the parties' updates need only them), the next
  // tasks as soon as the slicer is done: D_s's own update below overlaps the parties'.
  {
    ScopedPhase codec(profile_, StepPhase::kCodec);
    for (size_t k = 0; k < roster_.size(); ++k) {
      v1::CuratorMessage message = Envelope(round, step);
      ToWire(gradients.real[k], message.mutable_feature_gradients()->mutable_grad_real());
      ToWire(gradients.fake[k], message.mutable_feature_gradients()->mutable_grad_fake());
      hub_.Send(static_cast<int>(k), std::move(message));
    }
  }
  RETURN_IF_ERROR(Timed(profile_, StepPhase::kCompute, [&] { return slicer_.Await(); }));
  SendTasks(round, last ? -1 : step + 1, next);
  ASSIGN_OR_RETURN(const double loss, Timed(profile_, StepPhase::kCompute, [&] { return model->StepSharedCritic(); }));
  // Outside the modes where D_s sees only released features, its loss is computed on
  // clean real features: it stays in the curator's own log.
  absl::MutexLock lock(&mu_);
  last_critic_loss_ = loss;
  if (publishes_critic_loss_) status_.set_critic_loss(loss);
  return absl::OkStatus();
}

absl::Status CuratorCore::GeneratorStep(int64_t round) {
  absl::MutexLock model_lock(&model_mu_);
  CuratorModel* const model = model_.get();  // the lambdas below run under model_mu_
  ScopedStep timing(profile_, v1::STEP_GENERATOR, round);
  // Its tasks were sent by the round's last critic step.
  std::vector<torch::Tensor> features;
  for (size_t k = 0; k < roster_.size(); ++k) {
    ASSIGN_OR_RETURN(const v1::PartyMessage reply,
                     Expect(static_cast<int>(k), v1::PartyMessage::kGeneratorFeatures, round, -1));
    ScopedPhase codec(profile_, StepPhase::kCodec);
    features.push_back(FromWire(reply.generator_features().h()));
  }
  const std::vector<torch::Tensor> grads =
      Timed(profile_, StepPhase::kCompute, [&] { return model->SharedGeneratorGradients(features); });
  if (publishes_critic_loss_) {
    const double generator_loss = model->shared_generator_loss();
    absl::MutexLock lock(&mu_);
    status_.set_generator_loss(generator_loss);
  }
  {
    ScopedPhase codec(profile_, StepPhase::kCodec);
    for (size_t k = 0; k < roster_.size(); ++k) {
      v1::CuratorMessage message = Envelope(round, -1);
      ToWire(grads[k], message.mutable_generator_feature_gradient()->mutable_grad());
      hub_.Send(static_cast<int>(k), std::move(message));
    }
  }
  std::vector<torch::Tensor> slice_grads;
  for (size_t k = 0; k < roster_.size(); ++k) {
    ASSIGN_OR_RETURN(const v1::PartyMessage reply,
                     Expect(static_cast<int>(k), v1::PartyMessage::kSliceGradient, round, -1));
    ScopedPhase codec(profile_, StepPhase::kCodec);
    slice_grads.push_back(FromWire(reply.slice_gradient().grad()));
  }
  return Timed(profile_, StepPhase::kCompute, [&] { return model->GeneratorStep(round, slice_grads); });
}

int64_t CuratorCore::TotalRounds() const { return horizontal() ? privacy_plan_.rounds() : config_.training().rounds(); }

bool CuratorCore::RecordProgress(int64_t done, int64_t first_round, double elapsed_seconds) {
  const int64_t total = TotalRounds();
  const double rate = (done - first_round) / std::max(elapsed_seconds, 1e-9);
  status_.set_round(done);
  status_.set_rounds_per_second(rate);
  status_.set_eta_seconds((total - done) / std::max(rate, 1e-9));
  const bool log = done % config_.training().log_every() == 0 || done == total;
  if (log) UpdateEpsilonSpent(done);
  return log;
}

absl::Status CuratorCore::Train() {
  if (horizontal()) return TrainHorizontal();
  const v1::TrainingConfig& t = config_.training();
  // Lock order: model_mu_ is taken before mu_, never inside it.
  const std::vector<const TableEncoder*> encoders = Encoders();
  {
    absl::MutexLock model_lock(&model_mu_);
    model_ = std::make_unique<CuratorModel>(config_.model(), t, encoders);
    snapshot_model_ = std::make_unique<CuratorModel>(config_.model(), t, encoders);
    if (config_.privacy().mode() == v1::PrivacyConfig::dpsgd) {
      RETURN_IF_ERROR(LoadOrDrawNoiseKey());
      const double z = privacy_plan_.shared_critic_noise_multiplier();
      model_->SetSharedCriticPrivacy(z, config_.privacy().clip_norm(), noise_key_);
      // Only holds the live model's state, copied at each round's end; it never steps.
      snapshot_model_->SetSharedCriticPrivacy(z, config_.privacy().clip_norm(), noise_key_);
      // No warning: the parties' threshold does not carry over to D_s, whose figure is
      // 5.6 in the best DP tables measured (ε = 10 over 10000 rounds).
      const int64_t parameters = model_->shared_critic_parameters();
      LogPlannedCriticNoise("dpsgd", "shared critic D_s", MeanGradientNoiseToClip(z, parameters, t.batch_size()),
                            parameters, t.batch_size(), std::numeric_limits<double>::infinity());
    }
  }
  if (!t.label_column().empty()) {
    ASSIGN_OR_RETURN(LabelPairExchange* const exchange, label_exchange());
    ASSIGN_OR_RETURN(MarginalTarget target, exchange->AwaitTarget(join_deadline_));
    spdlog::info("label pairs: G's target holds '{}' against {} blocks of the other parties, weight {}",
                 t.label_column(), target.pairs(), t.experimental().label_pair_weight());
    released_.SetLabelPairs(target, exchange->holder(), t.label_column());
    absl::MutexLock model_lock(&model_mu_);
    model_->SetLabelPairTarget(std::move(target), t.experimental().label_pair_weight());
  }
  ASSIGN_OR_RETURN(const int64_t first_round, StartFromCheckpoint());
  {
    absl::MutexLock lock(&mu_);
    status_.set_state("training");
    status_.set_round(first_round);
  }
  spdlog::info("training {} rounds: batch {}, n_critic {}, {} parties", t.rounds(), t.batch_size(),
               t.n_critic(), roster_.size());
  const auto start = std::chrono::steady_clock::now();
  for (int64_t round = first_round; round < t.rounds(); ++round) {
    hub_.BeginRound();
    for (int c = 0; c < t.n_critic(); ++c) {
      RETURN_IF_ERROR(CriticStep(round, round * t.n_critic() + c, c == 0, c + 1 == t.n_critic()));
    }
    RETURN_IF_ERROR(GeneratorStep(round));
    RETURN_IF_ERROR(AfterRound(round + 1));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    absl::MutexLock lock(&mu_);
    if (RecordProgress(round + 1, first_round, elapsed)) {
      int64_t sent = 0, received = 0;
      for (size_t k = 0; k < roster_.size(); ++k) {
        sent += hub_.bytes_sent(static_cast<int>(k));
        received += hub_.bytes_received(static_cast<int>(k));
      }
      spdlog::info("round {}/{} critic_loss={:.4f}{} rounds/s={:.2f} eta={:.0f}s wire={:.1f} MiB", round + 1,
                   t.rounds(), last_critic_loss_,
                   status_.has_epsilon_spent() ? absl::StrFormat(" epsilon=%.3f", status_.epsilon_spent()) : "",
                   status_.rounds_per_second(), status_.eta_seconds(), (sent + received) / 1048576.0);
    }
  }
  return checkpointer_.Await();  // the last round's checkpoint is on disk before the run ends
}

absl::Status CuratorCore::LoadOrDrawNoiseKey() {
  ASSIGN_OR_RETURN(noise_key_, ResumeOrNewHexSecret(resume_, NoiseKeyPath(config_),
                                                     "it holds the key of D_s's DP noise, without which "
                                                     "replayed steps would release new noise"));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CuratorCore::StartFromCheckpoint() {
  const int64_t published_rows = PublishedRows();
  {
    absl::MutexLock lock(&mu_);
    std::vector<v1::Schema> schemas;
    for (const auto& registration : registrations_) schemas.push_back(registration->schema());
    data_digest_ = CuratorDataDigest(**intersection_size_, schemas);
    generator_header_ = MakeGeneratorHeader(config_, schemas, published_rows, privacy_plan_);
  }
  const std::string path = CuratorCheckpointPath(config_);
  if (!resume_) {
    RETURN_IF_ERROR(MakeDirectories(config_.checkpoint_dir()));
    if (!noise_key_.empty()) RETURN_IF_ERROR(WritePrivateFile(NoiseKeyPath(config_), noise_key_));
    absl::MutexLock model_lock(&model_mu_);
    SavedState state;
    if (horizontal()) {
      state = SaveState(*horizontal_model_);
    } else {
      ASSIGN_OR_RETURN(state, SaveState(*model_));
    }
    RETURN_IF_ERROR(WriteCheckpointState(0, state));
    return 0;
  }
  ASSIGN_OR_RETURN(const Checkpoint checkpoint, ReadCheckpoint(path));
  RETURN_IF_ERROR(CheckCuratorCheckpointHeader(checkpoint.header, config_, data_digest_, path));
  const int64_t round = checkpoint.header.round();
  if (round < 0 || round > TotalRounds()) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", path, " is at round ", round, ", outside this run's ", TotalRounds(), " rounds"));
  }
  {
    absl::MutexLock model_lock(&model_mu_);
    RETURN_IF_ERROR(horizontal() ? horizontal_model_->Restore(checkpoint.payload)
                                 : RestoreCuratorState(checkpoint.payload, *model_));
  }
  durable_round_ = round;
  spdlog::info("resumed run '{}' at round {} from {}", config_.run_id(), round, path);
  return round;
}

int64_t CuratorCore::PublishedRows() const {
  if (config_.output().rows() > 0) return config_.output().rows();
  if (!horizontal()) return privacy_plan_.records();
  absl::MutexLock lock(&mu_);
  int64_t rows = 0;  // as many as the parties hold
  for (const auto& registration : registrations_) rows += registration->rows();
  return rows;
}

absl::StatusOr<CuratorCore::SavedState> CuratorCore::SaveState(CuratorModel& model) {
  SavedState state;
  ASSIGN_OR_RETURN(state.checkpoint, SaveCuratorState(model));
  ASSIGN_OR_RETURN(state.generator, SavePublishedGenerator(model));
  return state;
}

CuratorCore::SavedState CuratorCore::SaveState(const HorizontalModel& model) {
  return SavedState{model.Save(), model.SavePublished()};
}

absl::Status CuratorCore::WriteCheckpointState(int64_t next_round, const SavedState& state) {
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(WriteCheckpoint(CuratorCheckpointPath(config_),
                                  CuratorCheckpointHeader(config_, data_digest_, next_round), state.checkpoint));
  GeneratorArtefact artefact{generator_header_, state.generator};
  artefact.header.set_round(next_round);
  RETURN_IF_ERROR(WriteGeneratorArtefact(GeneratorArtefactPath(config_), artefact));
  spdlog::debug("checkpoint of round {}: {} bytes and the generator's {} in {:.1f} ms", next_round,
                state.checkpoint.size(), state.generator.size(), absl::ToDoubleMilliseconds(absl::Now() - start));
  // Only now may parties forget their replies for the rounds before it.
  durable_round_ = next_round;
  return absl::OkStatus();
}

absl::Status CuratorCore::AfterRound(int64_t next_round) {
  ScopedStep timing(profile_, v1::STEP_CHECKPOINT, next_round);
  ScopedPhase durability(profile_, StepPhase::kDurability);
  // The previous round's job is done with the copy (and its bytes are in snapshot_).
  RETURN_IF_ERROR(checkpointer_.Await());
  {
    // A copy, not the serialization (2-3 ms per round at VFLGAN's sizes): that runs in
    // the job, off the rounds' critical path.
    absl::MutexLock model_lock(&model_mu_);
    RETURN_IF_ERROR(CopyCuratorState(*model_, *snapshot_model_));
  }
  const bool due = next_round % config_.checkpoint_every() == 0 || next_round == config_.training().rounds();
  // Serialized and written while the next round runs; parties learn the new
  // durable_round only once it is on disk.
  return checkpointer_.Start([this, next_round, due]() -> absl::Status {
    ASSIGN_OR_RETURN(SavedState state, SaveState(*snapshot_model_));
    snapshot_ = std::make_shared<const SavedState>(std::move(state));
    snapshot_round_ = next_round;
    return due ? WriteCheckpointState(next_round, *snapshot_) : absl::OkStatus();
  });
}

void CuratorCore::CheckpointAtShutdown() {
  if (const absl::Status status = checkpointer_.Await(); !status.ok()) {
    spdlog::error("writing a checkpoint failed: {}", status.ToString());
  }
  if (snapshot_round_ <= durable_round_) return;
  const absl::Status status = WriteCheckpointState(snapshot_round_, *snapshot_);
  if (status.ok()) {
    spdlog::info("checkpoint at round {} written on the way out", snapshot_round_);
  } else {
    spdlog::error("could not write the checkpoint of round {}: {}", snapshot_round_, status.ToString());
  }
}

void CuratorCore::Fail(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  status_.set_state("failed");
  status_.set_error(status.ToString());
}

absl::Status CuratorCore::Run() {
  absl::Status status = WaitForParties();
  if (status.ok()) {
    try {
      status = Train();
    } catch (const c10::Error& e) {
      status = absl::InternalError(absl::StrCat("LibTorch error: ", e.what_without_backtrace()));
    }
  }
  // A cancelled run has ended the streams already (the parties redial and can join a resumed run).
  for (size_t k = 0; k < roster_.size() && !hub_.cancelled(); ++k) {
    v1::CuratorMessage message = Envelope(TotalRounds(), -1);
    message.mutable_finished()->set_message(status.ok() ? "training finished" : status.ToString());
    message.mutable_finished()->set_succeeded(status.ok());
    hub_.Send(static_cast<int>(k), std::move(message));
  }
  hub_.CloseAll();
  if (!status.ok()) {
    CheckpointAtShutdown();
    Fail(status);
    return status;
  }
  if (!config_.output().synthetic_csv().empty()) {
    const int64_t rows = PublishedRows();
    // One intra-op thread, as `vfsynth synthesize` redraws it from the artefact: a
    // reduction split over threads changes last bits, and with them a rounded value.
    absl::StatusOr<CsvTable> table = [&] {
      ScopedIntraOpThreads one_thread(1);
      return Synthesize(rows);
    }();
    status = table.ok() ? WriteCsv(config_.output().synthetic_csv(), *table) : table.status();
    if (status.ok()) status = WritePrivacyStatement(config_.output().synthetic_csv(), privacy_plan_);
    if (status.ok()) status = WriteReleasedFidelity(*table);
    if (!status.ok()) {
      Fail(status);
      return status;
    }
    spdlog::info("published {} synthetic rows to {} with its privacy statement {}", rows,
                 config_.output().synthetic_csv(), PrivacyStatementPath(config_.output().synthetic_csv()));
  }
  absl::MutexLock lock(&mu_);
  status_.set_state("finished");
  return absl::OkStatus();
}

absl::Status CuratorCore::WriteReleasedFidelity(const CsvTable& published) const {
  ASSIGN_OR_RETURN(const std::optional<v1::ReleasedFidelity> report,
                   released_.Report(published, Encoders(), privacy_plan_));
  if (!report.has_value()) return absl::OkStatus();
  const std::string path = ReleasedFidelityPath(config_.output().synthetic_csv());
  ASSIGN_OR_RETURN(const std::string json, ToJson(*report, /*include_defaults=*/true));
  RETURN_IF_ERROR(WriteFileAtomically(path, json));
  spdlog::info(
      "released statistics: the published table scores {:.3f} against {} released histograms; the true "
      "table would score about {:.3f} from their noise ({})",
      report->score(), report->histograms_size(), 1.0 - report->noise_floor(), path);
  return absl::OkStatus();
}

void CuratorCore::Cancel(absl::Status reason) {
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_.ok()) cancelled_ = reason;
    if (label_exchange_.has_value() && label_exchange_->ok()) label_exchange_->value()->Cancel(reason);
  }
  psi_.Cancel(reason);
  hub_.Cancel(std::move(reason));
}

v1::StatusResponse CuratorCore::Status() const {
  absl::MutexLock lock(&mu_);
  v1::StatusResponse status = status_;
  for (size_t k = 0; k < roster_.size(); ++k) {
    v1::PartyStatus* party = status.add_parties();
    party->set_name(roster_[k]);
    party->set_registered(registrations_[k].has_value());
    party->set_aligned(horizontal() ? static_cast<bool>(joined_[k]) : psi_.Done(static_cast<int>(k)));
    party->set_connected(hub_.connected(static_cast<int>(k)));
    party->set_peer(hub_.peer(static_cast<int>(k)));
    const absl::Time last = hub_.last_message(static_cast<int>(k));
    party->set_seconds_since_last_message(
        last == absl::InfinitePast() ? -1 : absl::ToDoubleSeconds(absl::Now() - last));
    if (party_epsilon_spent_.has_value()) party->set_epsilon_spent(*party_epsilon_spent_);
    party->set_bytes_sent(hub_.bytes_sent(static_cast<int>(k)));
    party->set_bytes_received(hub_.bytes_received(static_cast<int>(k)));
  }
  return status;
}

absl::StatusOr<CsvTable> CuratorCore::Synthesize(int64_t rows) {
  if (rows <= 0 || rows > kMaxSynthesisRows) {
    return absl::InvalidArgumentError(absl::StrCat("rows must be in [1, ", kMaxSynthesisRows, "]"));
  }
  const std::vector<const TableEncoder*> encoders = Encoders();
  absl::MutexLock model_lock(&model_mu_);
  if (model_ == nullptr && horizontal_model_ == nullptr)
    return absl::FailedPreconditionError("training has not started");
  at::init_num_threads();  // a Synthesize call runs on a gRPC thread: the configured count
  try {
    if (horizontal()) return horizontal_model_->Sample(*encoders[0], rows, config_.training().seed());
    return DecodeJoint(SampleSynthetic(model_->published_generator(), config_.training().seed(), rows,
                                       publication_temperature_),
                       encoders);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("LibTorch error: ", e.what_without_backtrace()));
  }
}

}  // namespace vfsynth
