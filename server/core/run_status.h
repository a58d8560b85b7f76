#ifndef VFSYNTH_SERVER_CORE_RUN_STATUS_H_
#define VFSYNTH_SERVER_CORE_RUN_STATUS_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth {

// What `vfsynth status` shows of a run, written by the lifecycle and by the protocol's
// rounds and read by any thread: the phase, the plan and each observer's ε spent, the
// rounds' progress and, where D_s sees released features alone, its losses.
class RunStatus {
 public:
  explicit RunStatus(const v1::CuratorConfig& config);

  v1::RunPhase phase() const;
  void SetPhase(v1::RunPhase phase);
  // Moves to `to` only from `from` (a party rejoining does not set a run back).
  void Advance(v1::RunPhase from, v1::RunPhase to);
  void Fail(const absl::Status& reason);

  void SetAlignedRecords(int64_t records);
  // The attested plan: its digest, every observer's planned ε, the run's rounds.
  void SetPlan(const v1::PrivacyPlan& plan);

  // Training starts (or resumes) at `first_round`: the rate and ETA count from now.
  void StartRounds(int64_t first_round);
  struct Progress {
    bool due = false;  // a progress line is due (training.log_every, or the last round)
    double rounds_per_second = 0;
    double eta_seconds = 0;
    std::optional<double> epsilon_spent;  // the published output's, where the run has one
  };
  // After round `done` - 1: the round, rate and ETA, and, when a line is due, ε spent.
  Progress CompleteRound(int64_t done);
  // D_s's losses, shown only where it sees released features alone.
  void SetCriticLoss(double loss);
  void SetGeneratorLoss(double loss);

  // The run's status without the per-party lines; `party_epsilon_spent` is each party's
  // own releases' ε so far (unset where the run makes no DP claim).
  v1::StatusResponse Snapshot(std::optional<double>* party_epsilon_spent) const;

 private:
  void UpdateEpsilonSpent(int64_t rounds) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t log_every_;
  mutable absl::Mutex mu_;
  v1::StatusResponse status_ ABSL_GUARDED_BY(mu_);
  v1::PrivacyPlan plan_ ABSL_GUARDED_BY(mu_);
  std::optional<double> party_epsilon_spent_ ABSL_GUARDED_BY(mu_);
  int64_t first_round_ ABSL_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point start_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_RUN_STATUS_H_
