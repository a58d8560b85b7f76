// CuratorCore's round protocol in the horizontal topology (docs/horizontal.md): the join,
// the identical schemas, and the rounds of the federated autoencoder.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/federated/horizontal_party.h"
#include "server/core/curator_core.h"
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
      return absl::StrCat("column ", i + 1, " ('", a.columns(i).name(), "' against '", b.columns(i).name(),
                          "') is declared differently");
    }
  }
  if (a.missing_token() != b.missing_token()) return "the missing-value token differs";
  return "";
}

}  // namespace

absl::Status CuratorCore::CheckSameSchema(int index, const v1::Schema& schema) const {
  for (size_t k = 0; k < roster_.size(); ++k) {
    if (static_cast<int>(k) == index || !registrations_[k].has_value()) continue;
    const std::string difference = SchemaDifference(registrations_[k]->schema(), schema);
    if (!difference.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("party '", roster_[index], "' registers another schema than '",
                                                        roster_[k], "' (", difference,
                                                        "): every party of a horizontal run holds the same columns"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> CuratorCore::NotJoined() const {
  std::vector<std::string> waiting;
  for (size_t k = 0; k < roster_.size(); ++k) {
    if (!joined_[k]) waiting.push_back(roster_[k]);
  }
  return waiting;
}

std::vector<int64_t> CuratorCore::Populations() const {
  std::vector<int64_t> populations;
  for (const auto& registration : registrations_) populations.push_back(registration->users());
  return populations;
}

absl::StatusOr<v1::AlignResponse> CuratorCore::JoinHorizontal(int index) {
  absl::MutexLock lock(&mu_);
  if (!joined_[index]) spdlog::info("party {} joined", roster_[index]);
  joined_[index] = true;
  if (status_.state() == "waiting") status_.set_state("aligning");
  auto all_joined = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !cancelled_.ok() || std::all_of(joined_.begin(), joined_.end(), [](bool joined) { return joined; });
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&all_joined), join_deadline_)) {
    return absl::DeadlineExceededError("not every party joined before the join timeout");
  }
  if (!cancelled_.ok()) return cancelled_;
  const std::vector<int64_t> populations = Populations();
  const int64_t users = std::accumulate(populations.begin(), populations.end(), int64_t{0});
  if (!intersection_size_.has_value()) {
    intersection_size_ = users;
    status_.set_aligned_records(users);
    spdlog::info("every party joined: {} users", users);
  }
  v1::AlignResponse response;
  response.mutable_aligned()->set_records(users);
  return response;
}

absl::Status CuratorCore::TrainHorizontal() {
  const v1::HorizontalConfig& h = config_.horizontal();
  const std::vector<const TableEncoder*> encoders = Encoders();
  {
    absl::MutexLock model_lock(&model_mu_);
    horizontal_model_ = std::make_unique<HorizontalModel>(WaeOptions{encoders[0]->width(), h.hidden(), h.latent()},
                                                          h.gamma(), config_.training().seed());
    horizontal_parameters_ = horizontal_model_->parameters();
  }
  ASSIGN_OR_RETURN(const int64_t first_round, StartFromCheckpoint());
  const int64_t rounds = TotalRounds();
  {
    absl::MutexLock lock(&mu_);
    status_.set_state("training");
    status_.set_round(first_round);
  }
  // Every party has joined: the populations the rounds' users are split over are fixed.
  const std::vector<int64_t> populations = [this] {
    absl::MutexLock lock(&mu_);
    return Populations();
  }();
  spdlog::info("training {} rounds: {} users a round over {} parties, a model of {} parameters", rounds,
               h.users_per_round(), roster_.size(), horizontal_parameters_);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t round = first_round; round < rounds; ++round) {
    RETURN_IF_ERROR(HorizontalRound(round, populations));
    RETURN_IF_ERROR(AfterHorizontalRound(round + 1));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    absl::MutexLock lock(&mu_);
    if (RecordProgress(round + 1, first_round, elapsed)) {
      int64_t received = 0;
      for (size_t k = 0; k < roster_.size(); ++k) received += hub_.bytes_received(static_cast<int>(k));
      spdlog::info("round {}/{} epsilon={:.3f} per user rounds/s={:.2f} eta={:.0f}s uplink={:.1f} KiB", round + 1,
                   rounds, status_.epsilon_spent(), status_.rounds_per_second(), status_.eta_seconds(),
                   received / 1024.0);
    }
  }
  return absl::OkStatus();
}

absl::Status CuratorCore::HorizontalRound(int64_t round, const std::vector<int64_t>& populations) {
  hub_.BeginRound();
  v1::CuratorMessage task = Envelope(round, -1);
  {
    absl::MutexLock model_lock(&model_mu_);
    horizontal_model_->ToWire(task.mutable_horizontal_task()->mutable_model());
  }
  const int64_t parties = static_cast<int64_t>(roster_.size());
  const int64_t users_per_round = config_.horizontal().users_per_round();
  // dpfedavg: every party samples its own users (the curator asks for none).
  const bool sign_ds = config_.privacy().mode() == v1::PrivacyConfig::signds;
  for (int64_t k = 0; k < parties; ++k) {
    asked_[k] = sign_ds ? UsersAskedOf(users_per_round, populations, static_cast<size_t>(k), round) : 0;
    v1::CuratorMessage message = task;
    message.mutable_horizontal_task()->set_users(asked_[k]);
    hub_.Send(static_cast<int>(k), std::move(message));
  }
  const v1::PartyMessage::PayloadCase expected =
      sign_ds ? v1::PartyMessage::kSignDsReports : v1::PartyMessage::kUpdateSum;
  std::vector<v1::PartyMessage> replies;
  for (int64_t k = 0; k < parties; ++k) {
    ASSIGN_OR_RETURN(v1::PartyMessage reply, Expect(static_cast<int>(k), expected, round, -1));
    replies.push_back(std::move(reply));
  }
  absl::MutexLock model_lock(&model_mu_);
  if (sign_ds) {
    std::vector<v1::SignDsReports> reports;
    for (v1::PartyMessage& reply : replies) reports.push_back(std::move(*reply.mutable_sign_ds_reports()));
    horizontal_model_->Step(reports);
  } else {
    std::vector<v1::UpdateSum> sums;
    for (v1::PartyMessage& reply : replies) sums.push_back(std::move(*reply.mutable_update_sum()));
    horizontal_model_->StepSums(sums, users_per_round);
  }
  return absl::OkStatus();
}

absl::Status CuratorCore::AfterHorizontalRound(int64_t next_round) {
  if (next_round % config_.checkpoint_every() != 0 && next_round != TotalRounds()) return absl::OkStatus();
  {
    absl::MutexLock model_lock(&model_mu_);
    snapshot_ = std::make_shared<const SavedState>(SaveState(*horizontal_model_));
  }
  snapshot_round_ = next_round;
  return WriteCheckpointState(next_round, *snapshot_);
}

}  // namespace vfsynth
