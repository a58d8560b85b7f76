#ifndef VFSYNTH_SERVER_CORE_CURATOR_CORE_H_
#define VFSYNTH_SERVER_CORE_CURATOR_CORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/step_profile.h"
#include "common/data/csv.h"
#include "server/core/curator_protocol.h"
#include "server/core/curator_run.h"
#include "server/core/registry.h"
#include "server/core/run_checkpoints.h"
#include "server/core/run_status.h"
#include "server/core/session_hub.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// The curator's run lifecycle with no gRPC types (the service in curator_service.h is a
// thin adapter), whatever the protocol: the roster and the checks every registration
// passes, the join gate, the privacy plan and its attestation, cancellation and failure,
// the status, the checkpoint directory, and publication. How the parties get from
// registered to a model is the protocol's (CuratorProtocol: VerticalRounds,
// HorizontalRounds). Callers pass the already-authenticated party.
//
// Phases (RunPhase): waiting -> aligning -> planning -> training -> publishing ->
// finished, or failed from any of them.
class CuratorCore {
 public:
  // `config` must be resolved (common/config/config.h) and `protocol` be the one its
  // topology runs. With `resume`, training continues from the checkpoint in
  // config.checkpoint_dir (same run, configuration, parties and records) and the parties
  // get reconnect_timeout_seconds to rejoin.
  // `run_nonce` names this start of the run (CheckCuratorCheckpointOnStartup).
  CuratorCore(v1::CuratorConfig config, std::unique_ptr<CuratorProtocol> protocol,
              std::string run_nonce, bool resume = false);
  ~CuratorCore();

  const v1::CuratorConfig& config() const { return config_; }
  const std::vector<std::string>& roster() const { return roster_; }
  SessionHub& hub() { return hub_; }
  CuratorProtocol& protocol() { return *protocol_; }
  // Per-step wall-clock breakdown of the rounds (docs/performance.md).
  StepProfile& profile() { return profile_; }

  absl::StatusOr<v1::RegisterResponse> Register(const std::string& party,
                                                const v1::RegisterRequest& request);
  // One Align call (the protocol's alignment, or join): blocks until the party's answer
  // is ready (or the join deadline passes). An answer that fixes the run's records fails
  // for everyone if the run cannot train on them.
  absl::StatusOr<v1::AlignResponse> Align(const std::string& party,
                                          const v1::AlignRequest& request);

  // After Align: blocks until the curator has planned and every party's plan matched
  // it (or the join deadline passes), then answers with its plan. A party whose plan
  // differs fails the whole run with an error naming the party and the first setting
  // that differs.
  absl::StatusOr<v1::AttestPlanResponse> AttestPlan(const std::string& party,
                                                    const v1::AttestPlanRequest& request);
  // OK once `party`'s plan matched the curator's (Train is refused before).
  absl::Status CheckAttested(const std::string& party) const;

  // Releases between the plan and the rounds, where the protocol has them: label pairs
  // (training.label_column) and a party's marginal release (training.marginal_weight > 0).
  absl::StatusOr<v1::ShareLabelsResponse> ShareLabels(const std::string& party,
                                                      const v1::ShareLabelsRequest& request);
  absl::StatusOr<v1::LabelPairsResponse> ReleaseLabelPairs(const std::string& party,
                                                           const v1::LabelPairsRequest& request);
  absl::StatusOr<v1::MarginalsResponse> ReleaseMarginals(const std::string& party,
                                                         const v1::MarginalsRequest& request);

  // Runs the whole job: waits for every party, trains, sends Finished, writes the
  // synthetic CSV (if configured). Returns the run's outcome.
  absl::Status Run();
  // Stops a running job (shutdown): every wait returns `reason`.
  void Cancel(absl::Status reason);

  v1::StatusResponse Status() const;
  // The attested privacy plan, once the curator has planned.
  std::optional<v1::PrivacyPlan> Plan() const;
  // Samples and decodes rows from the current model.
  absl::StatusOr<CsvTable> Synthesize(int64_t rows);

 private:
  // The roster index of a calling party, if it is in the roster and names this run.
  absl::StatusOr<int> RosterIndex(const std::string& party, const std::string& run_id) const;
  // Once alignment fixed the records: whether the run can go on with them (kept for
  // every later Align call and the orchestrator).
  void AcceptRecords(int64_t records) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The orchestrator's steps; each returns the first error (timeouts name the party).
  absl::StatusOr<int64_t> AwaitRecords();
  // The run's privacy plan for `records` (the same every party resolves), refused if it
  // exceeds the budgets; parties attest against it.
  absl::Status PlanPrivacy(int64_t records);
  absl::Status Train();
  // Restores the checkpoint (resume) or writes round 0's; returns the first round to run.
  absl::StatusOr<int64_t> StartFromCheckpoint();
  // Finished to every party that still has a stream, then the streams close.
  void SendFinished(const absl::Status& outcome);
  absl::Status Publish();
  // The rows the curator publishes: output.rows, or the protocol's default.
  int64_t PublishedRows() const;
  // Before training: logs `reason`, cancels every wait of the run with it and returns it.
  absl::Status FailRun(absl::Status reason);

  const v1::CuratorConfig config_;
  const std::vector<std::string> roster_;
  Registry registry_;
  SessionHub hub_;
  StepProfile profile_;
  RunStatus status_;
  RunCheckpoints checkpoints_;
  JoinDeadline join_;
  CuratorRun run_;
  const std::unique_ptr<CuratorProtocol> protocol_;
  // The orchestrator's: the aligned records, and the plan once PlanPrivacy set it (a
  // copy of plan_).
  int64_t records_aligned_ = 0;
  v1::PrivacyPlan privacy_plan_;

  mutable absl::Mutex mu_;
  // The number of records every party holds once alignment is done, or why the run
  // cannot train on them.
  std::optional<absl::StatusOr<int64_t>> records_ ABSL_GUARDED_BY(mu_);
  // Set by PlanPrivacy: the plan, or why the curator could not plan.
  std::optional<absl::StatusOr<v1::PrivacyPlan>> plan_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> attested_ ABSL_GUARDED_BY(mu_);  // per party: its plan matched
  // Per party: its signed statement as it last sent it (AttestPlanRequest.statement), relayed
  // to every party, which checks them (the curator cannot: they bind the parties' secrets).
  std::vector<std::string> statements_ ABSL_GUARDED_BY(mu_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_CURATOR_CORE_H_
