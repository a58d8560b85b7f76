#include "server/core/horizontal_rounds.h"

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/federated/horizontal_party.h"
#include "common/privacy/horizontal_feasibility.h"
#include "common/privacy/privacy_plan.h"
#include "common/protocol/tensor_codec.h"
#include "server/core/horizontal_model.h"

namespace vfsynth {
namespace {

// Where two schemas of the same columns part, for the refusal ("" if they do not).
std::string SchemaDifference(const v1::Schema& a, const v1::Schema& b) {
  if (a.columns_size() != b.columns_size()) {
    return absl::StrCat(a.columns_size(), " columns against ", b.columns_size());
  }
  for (int i = 0; i < a.columns_size(); ++i) {
    if (a.columns(i).SerializeAsString() != b.columns(i).SerializeAsString()) {
      return absl::StrCat("column ", i + 1, " ('", a.columns(i).name(), "' against '",
                          b.columns(i).name(), "') is declared differently");
    }
  }
  if (a.missing_token() != b.missing_token()) return "the missing-value token differs";
  return "";
}

// Whether the label can be expected to survive the run's noise, from public quantities:
// a warning when not, never a reason to stop (docs/horizontal.md).
void LogFeasibility(const v1::CuratorConfig& config, int parties, int64_t users,
                    int64_t parameters) {
  const absl::StatusOr<HorizontalFeasibility> feasibility = EstimateHorizontalFeasibility(
      config.privacy(), config.horizontal(), config.training(), parties, users, parameters);
  if (!feasibility.ok()) {
    spdlog::warn("feasibility: not estimated: {}", feasibility.status().ToString());
  } else if (feasibility->survives) {
    spdlog::info("{}", feasibility->line);
  } else {
    spdlog::warn("{}", feasibility->line);
  }
}

}  // namespace

HorizontalRounds::HorizontalRounds(const v1::CuratorConfig& config) : config_(config) {
  asked_.assign(config.parties_size(), 0);
  joined_.assign(config.parties_size(), false);
}

HorizontalRounds::~HorizontalRounds() = default;

void HorizontalRounds::Bind(CuratorRun* run) {
  run_ = run;
  // One exchange a round: a reply's place is its round.
  inbox_ = std::make_unique<PartyInbox>(
      *run, [](const v1::PartyMessage& message) -> std::optional<ReplyPosition> {
        if (!message.has_sign_ds_reports() && !message.has_update_sum()) return std::nullopt;
        return ReplyPosition{message.round(), 0};
      });
}

absl::Status HorizontalRounds::Admit(int party, const v1::RegisterRequest& request) const {
  const std::vector<std::optional<v1::RegisterRequest>> registered = run_->registry.All();
  const std::string& name = run_->roster[party];
  if (request.users() < 1 || request.users() > request.rows()) {
    return absl::InvalidArgumentError(absl::StrCat("party '", name, "' registers ", request.users(),
                                                   " users over ", request.rows(), " rows"));
  }
  for (size_t k = 0; k < registered.size(); ++k) {
    if (static_cast<int>(k) == party || !registered[k].has_value()) continue;
    const std::string difference = SchemaDifference(registered[k]->schema(), request.schema());
    if (!difference.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("party '", name, "' registers another schema than '", run_->roster[k], "' (",
                       difference, "): every party of a horizontal run holds the same columns"));
    }
  }
  return absl::OkStatus();
}

void HorizontalRounds::DescribeRun(v1::RegisterResponse* response) const {
  *response->mutable_horizontal() = config_.horizontal();
}

absl::Status HorizontalRounds::CheckAlign(int party, const v1::AlignRequest& request,
                                          const v1::RegisterRequest& /*registration*/) const {
  if (request.hop() != 0 || request.elements_size() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "party '", run_->roster[party], "' sent alignment elements to a horizontal run"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::AlignResponse> HorizontalRounds::Align(int party,
                                                          const v1::AlignRequest& /*request*/) {
  absl::MutexLock lock(&mu_);
  if (!joined_[party]) {
    spdlog::info("party {} joined", run_->roster[party]);
    run_->join.Progress();
  }
  joined_[party] = true;
  auto all_joined = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !cancelled_.ok() ||
           std::all_of(joined_.begin(), joined_.end(), [](bool joined) { return joined; });
  };
  if (!run_->join.Await(&mu_, absl::Condition(&all_joined))) {
    return absl::DeadlineExceededError("not every party joined before the join timeout");
  }
  if (!cancelled_.ok()) return cancelled_;
  const std::vector<int64_t> users = run_->registry.Users();
  v1::AlignResponse response;
  response.mutable_aligned()->set_records(std::accumulate(users.begin(), users.end(), int64_t{0}));
  return response;
}

absl::Status HorizontalRounds::AcceptRecords(int64_t records) {
  spdlog::info("every party joined: {} users", records);
  return absl::OkStatus();
}

bool HorizontalRounds::aligned(int party) const {
  absl::MutexLock lock(&mu_);
  return joined_[party];
}

std::vector<std::string> HorizontalRounds::NotJoined() const {
  std::vector<std::string> waiting;
  for (size_t k = 0; k < joined_.size(); ++k) {
    if (!joined_[k]) waiting.push_back(run_->roster[k]);
  }
  return waiting;
}

std::string HorizontalRounds::DescribeWaiting() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat("join timeout: parties that did not register and join: ",
                      absl::StrJoin(NotJoined(), ", "));
}

absl::StatusOr<v1::PrivacyPlan> HorizontalRounds::Plan(int64_t records) {
  return ResolveHorizontalPlan(config_.privacy(), config_.horizontal(), config_.training(),
                               static_cast<int>(run_->roster.size()), records);
}

void HorizontalRounds::LogPlan(const v1::PrivacyPlan& plan, const std::string& digest) const {
  const v1::PrivacyConfig& p = config_.privacy();
  if (p.mode() == v1::PrivacyConfig::signds) {
    spdlog::info(
        "privacy signds: epsilon {} per user over at most {} answer(s), {} rounds of {} users, "
        "plan {}",
        p.epsilon(), config_.horizontal().participation_cap(), plan.rounds(),
        config_.horizontal().users_per_round(), digest.substr(0, 16));
  } else if (p.mode() == v1::PrivacyConfig::dpfedavg) {
    spdlog::info(
        "privacy dpfedavg: {} rounds, each user drawn at rate {:.4g}, noise multiplier {:.4f}, "
        "plan {}",
        plan.rounds(), DpFedAvgMechanism(plan).sample_rate, plan.noise_multiplier(),
        digest.substr(0, 16));
  }
}

int64_t HorizontalRounds::DefaultPublishedRows(const v1::PrivacyPlan& /*plan*/) const {
  const std::vector<int64_t> rows = run_->registry.Rows();
  return std::accumulate(rows.begin(), rows.end(), int64_t{0});
}

absl::Status HorizontalRounds::Prepare(const v1::PrivacyPlan& plan) {
  rounds_ = plan.rounds();
  const v1::HorizontalConfig& h = config_.horizontal();
  const std::vector<const TableEncoder*> encoders = run_->registry.Encoders();
  absl::MutexLock model_lock(&model_mu_);
  model_ =
      std::make_unique<HorizontalModel>(WaeOptions{encoders[0]->width(), h.hidden(), h.latent()},
                                        h.gamma(), config_.training().seed());
  parameters_ = model_->parameters();
  return absl::OkStatus();
}

absl::StatusOr<SavedState> HorizontalRounds::Save() {
  absl::MutexLock model_lock(&model_mu_);
  return SavedState{model_->Save(), model_->SavePublished()};
}

absl::Status HorizontalRounds::Restore(const std::string& payload) {
  absl::MutexLock model_lock(&model_mu_);
  return model_->Restore(payload);
}

absl::Status HorizontalRounds::Train(int64_t first_round) {
  // Every party has joined: the populations the rounds' users are split over are fixed.
  const std::vector<int64_t> populations = run_->registry.Users();
  spdlog::info("training {} rounds: {} users a round over {} parties, a model of {} parameters",
               rounds_, config_.horizontal().users_per_round(), run_->roster.size(), parameters_);
  LogFeasibility(config_, static_cast<int>(run_->roster.size()),
                 std::accumulate(populations.begin(), populations.end(), int64_t{0}),
                 parameters_);
  for (int64_t round = first_round; round < rounds_; ++round) {
    RETURN_IF_ERROR(Round(round, populations));
    RETURN_IF_ERROR(AfterRound(round + 1));
    const RunStatus::Progress progress = run_->status.CompleteRound(round + 1);
    if (!progress.due) continue;
    int64_t received = 0;
    for (size_t k = 0; k < run_->roster.size(); ++k)
      received += run_->hub.bytes_received(static_cast<int>(k));
    spdlog::info(
        "round {}/{} epsilon={:.3f} per user rounds/s={:.2f} eta={:.0f}s uplink={:.1f} KiB",
        round + 1, rounds_, progress.epsilon_spent.value_or(0), progress.rounds_per_second,
        progress.eta_seconds, received / 1024.0);
  }
  return absl::OkStatus();
}

absl::Status HorizontalRounds::Round(int64_t round, const std::vector<int64_t>& populations) {
  run_->hub.BeginRound();
  v1::CuratorMessage task = inbox_->Envelope(round, -1);
  {
    absl::MutexLock model_lock(&model_mu_);
    model_->ToWire(task.mutable_horizontal_task()->mutable_model());
  }
  const int64_t parties = static_cast<int64_t>(run_->roster.size());
  const int64_t users_per_round = config_.horizontal().users_per_round();
  // dpfedavg: every party samples its own users (the curator asks for none).
  const bool sign_ds = config_.privacy().mode() == v1::PrivacyConfig::signds;
  for (int64_t k = 0; k < parties; ++k) {
    asked_[k] =
        sign_ds ? UsersAskedOf(users_per_round, populations, static_cast<size_t>(k), round) : 0;
    v1::CuratorMessage message = task;
    message.mutable_horizontal_task()->set_users(asked_[k]);
    run_->hub.Send(static_cast<int>(k), std::move(message));
  }
  const v1::PartyMessage::PayloadCase expected =
      sign_ds ? v1::PartyMessage::kSignDsReports : v1::PartyMessage::kUpdateSum;
  std::vector<v1::PartyMessage> replies;
  for (int64_t k = 0; k < parties; ++k) {
    ASSIGN_OR_RETURN(v1::PartyMessage reply,
                     inbox_->Expect(static_cast<int>(k), expected, round, -1,
                                    [&](const v1::PartyMessage& message) -> absl::Status {
                                      if (sign_ds) {
                                        return CheckSignDsReports(message.sign_ds_reports(),
                                                                  asked_[k], parameters_);
                                      }
                                      return ValidateTensor(message.update_sum().sum(),
                                                            {parameters_}, "update_sum.sum",
                                                            config_.max_message_bytes());
                                    }));
    replies.push_back(std::move(reply));
  }
  absl::MutexLock model_lock(&model_mu_);
  if (sign_ds) {
    std::vector<v1::SignDsReports> reports;
    for (v1::PartyMessage& reply : replies)
      reports.push_back(std::move(*reply.mutable_sign_ds_reports()));
    model_->Step(reports);
  } else {
    std::vector<v1::UpdateSum> sums;
    for (v1::PartyMessage& reply : replies) sums.push_back(std::move(*reply.mutable_update_sum()));
    model_->StepSums(sums, users_per_round);
  }
  return absl::OkStatus();
}

absl::Status HorizontalRounds::AfterRound(int64_t next_round) {
  if (!run_->checkpoints.Due(next_round, rounds_)) return absl::OkStatus();
  ASSIGN_OR_RETURN(const SavedState state, Save());
  return run_->checkpoints.Write(next_round, state);
}

absl::StatusOr<CsvTable> HorizontalRounds::Sample(int64_t rows) {
  const std::vector<const TableEncoder*> encoders = run_->registry.Encoders();
  absl::MutexLock model_lock(&model_mu_);
  if (model_ == nullptr) return absl::FailedPreconditionError("training has not started");
  at::init_num_threads();  // a Sample call may run on a gRPC thread: the configured count
  return model_->Sample(*encoders[0], rows, config_.training().seed());
}

void HorizontalRounds::Cancel(const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.ok()) cancelled_ = reason;
}

}  // namespace vfsynth
