#include "server/core/run_status.h"

#include <algorithm>

#include "common/privacy/privacy_plan.h"

namespace vfsynth {

RunStatus::RunStatus(const v1::CuratorConfig& config) : log_every_(config.training().log_every()) {
  status_.set_run_id(config.run_id());
  status_.set_privacy_mode(config.privacy().mode());
  status_.set_delta(config.privacy().delta());
  status_.set_state(v1::waiting);
  status_.set_total_rounds(config.training().rounds());
}

v1::RunPhase RunStatus::phase() const {
  absl::MutexLock lock(&mu_);
  return status_.state();
}

void RunStatus::SetPhase(v1::RunPhase phase) {
  absl::MutexLock lock(&mu_);
  status_.set_state(phase);
}

void RunStatus::Advance(v1::RunPhase from, v1::RunPhase to) {
  absl::MutexLock lock(&mu_);
  if (status_.state() == from) status_.set_state(to);
}

void RunStatus::Fail(const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  status_.set_state(v1::failed);
  status_.set_error(reason.ToString());
}

void RunStatus::SetAlignedRecords(int64_t records) {
  absl::MutexLock lock(&mu_);
  status_.set_aligned_records(records);
}

void RunStatus::SetPlan(const v1::PrivacyPlan& plan) {
  absl::MutexLock lock(&mu_);
  plan_ = plan;
  status_.set_plan_digest(PlanDigest(plan));
  *status_.mutable_guarantees() = plan.guarantees();
  const v1::ObserverGuarantee& published = Guarantee(plan, Observer::kPublished);
  if (published.has_epsilon_planned()) status_.set_epsilon_planned(published.epsilon_planned());
  UpdateEpsilonSpent(0);
  status_.set_total_rounds(plan.rounds());
}

void RunStatus::StartRounds(int64_t first_round) {
  absl::MutexLock lock(&mu_);
  first_round_ = first_round;
  start_ = std::chrono::steady_clock::now();
  status_.set_round(first_round);
}

RunStatus::Progress RunStatus::CompleteRound(int64_t done) {
  absl::MutexLock lock(&mu_);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int64_t total = status_.total_rounds();
  Progress progress;
  progress.rounds_per_second = (done - first_round_) / std::max(elapsed, 1e-9);
  progress.eta_seconds = (total - done) / std::max(progress.rounds_per_second, 1e-9);
  status_.set_round(done);
  status_.set_rounds_per_second(progress.rounds_per_second);
  status_.set_eta_seconds(progress.eta_seconds);
  progress.due = done % log_every_ == 0 || done == total;
  if (progress.due) UpdateEpsilonSpent(done);
  if (status_.has_epsilon_spent()) progress.epsilon_spent = status_.epsilon_spent();
  return progress;
}

void RunStatus::SetCriticLoss(double loss) {
  absl::MutexLock lock(&mu_);
  status_.set_critic_loss(loss);
}

void RunStatus::SetGeneratorLoss(double loss) {
  absl::MutexLock lock(&mu_);
  status_.set_generator_loss(loss);
}

v1::StatusResponse RunStatus::Snapshot(std::optional<double>* party_epsilon_spent) const {
  absl::MutexLock lock(&mu_);
  *party_epsilon_spent = party_epsilon_spent_;
  return status_;
}

void RunStatus::UpdateEpsilonSpent(int64_t rounds) {
  for (int i = 0; i < status_.guarantees_size(); ++i) {
    v1::ObserverGuarantee* guarantee = status_.mutable_guarantees(i);
    if (!guarantee->has_epsilon_planned()) continue;
    auto spent = EpsilonAfter(plan_, kObservers[i], rounds);
    // The plan computed the whole run's figure; fewer rounds cannot fail where it did not.
    if (spent.ok() && spent->has_value()) guarantee->set_epsilon_spent(**spent);
  }
  const v1::ObserverGuarantee& published =
      status_.guarantees(static_cast<int>(Observer::kPublished));
  if (published.has_epsilon_spent()) status_.set_epsilon_spent(published.epsilon_spent());
  auto own = OwnReleasesEpsilonAfter(plan_, rounds);
  party_epsilon_spent_ = own.ok() ? *own : std::nullopt;
}

}  // namespace vfsynth
