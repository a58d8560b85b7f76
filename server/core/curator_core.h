#ifndef VFSYNTH_SERVER_CORE_CURATOR_CORE_H_
#define VFSYNTH_SERVER_CORE_CURATOR_CORE_H_

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/background_task.h"
#include "common/base/step_profile.h"
#include "common/data/csv.h"
#include "common/data/encoder.h"
#include "common/protocol/protocol_version.h"
#include "server/core/label_pair_exchange.h"
#include "server/core/psi_exchange.h"
#include "server/core/released_statistics.h"
#include "server/core/session_hub.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/generator.pb.h"

namespace at {
class Tensor;
}

namespace vfsynth {

class CuratorModel;
class HorizontalModel;

// The curator's logic with no gRPC types (the service in curator_service.h is a thin
// adapter): registration, alignment, the round orchestrator (docs/architecture.md, "One round") over a
// SessionHub, status and publication. Callers pass the already-authenticated party.
// In the horizontal topology (docs/horizontal.md) the same daemon runs another round
// protocol (curator_horizontal.cc): Align is a join without elements, and each round
// broadcasts the global autoencoder and applies the parties' SignDS reports.
class CuratorCore {
 public:
  // `config` must be resolved (common/config/config.h). With `resume`, training
  // continues from the checkpoint in config.checkpoint_dir (same run, configuration,
  // parties and records) and the parties get reconnect_timeout_seconds to rejoin.
  explicit CuratorCore(v1::CuratorConfig config, bool resume = false);
  ~CuratorCore();

  const v1::CuratorConfig& config() const { return config_; }
  const std::vector<std::string>& roster() const { return roster_; }
  SessionHub& hub() { return hub_; }
  // Per-step wall-clock breakdown of the rounds (docs/performance.md).
  StepProfile& profile() { return profile_; }

  absl::StatusOr<v1::RegisterResponse> Register(const std::string& party,
                                                const v1::RegisterRequest& request);
  // One hop of record alignment (PsiExchange::Submit): blocks until every party has
  // sent its list of the hop (or the join deadline passes). The last hop's answer
  // fails for everyone if fewer records than batch_size are held by every party.
  absl::StatusOr<v1::AlignResponse> Align(const std::string& party, const v1::AlignRequest& request);

  // After Align: blocks until the curator has planned and every party's plan matched
  // it (or the join deadline passes), then answers with its plan. A party whose plan
  // differs fails the whole run with an error naming the party and the first setting
  // that differs.
  absl::StatusOr<v1::AttestPlanResponse> AttestPlan(const std::string& party,
                                                    const v1::AttestPlanRequest& request);
  // OK once `party`'s plan matched the curator's (Train is refused before).
  absl::Status CheckAttested(const std::string& party) const;

  // Label pairs (training.label_column), between Align and Train (LabelPairExchange).
  absl::StatusOr<v1::ShareLabelsResponse> ShareLabels(const std::string& party,
                                                      const v1::ShareLabelsRequest& request);
  absl::StatusOr<v1::LabelPairsResponse> ReleaseLabelPairs(const std::string& party,
                                                           const v1::LabelPairsRequest& request);
  // A party's marginal release (training.marginal_weight > 0), kept for the report on
  // the published table (ReleasedStatistics).
  absl::StatusOr<v1::MarginalsResponse> ReleaseMarginals(const std::string& party, const v1::MarginalsRequest& request);

  // Runs the whole job: waits for every party, trains, sends Finished, writes the
  // synthetic CSV (if configured). Returns the run's outcome.
  absl::Status Run();
  // Stops a running job (shutdown): every wait returns `reason`.
  void Cancel(absl::Status reason);

  v1::StatusResponse Status() const;
  // Samples and decodes rows from the current generator.
  absl::StatusOr<CsvTable> Synthesize(int64_t rows);

  // The model after Run() returned (nullptr before training started).
  CuratorModel* model_for_testing() ABSL_NO_THREAD_SAFETY_ANALYSIS { return model_.get(); }
  const HorizontalModel* horizontal_model_for_testing() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return horizontal_model_.get();
  }

 private:
  // The label-pair exchange once alignment is done; FAILED_PRECONDITION if the run has
  // none (yet), or why it cannot have one.
  absl::StatusOr<LabelPairExchange*> label_exchange();
  // Once alignment is done: records the intersection size, or why it is too small, and
  // sets up the label-pair exchange.
  void AcceptIntersection(int64_t records) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The roster index of a calling party, if it is in the roster and names this run
  // (Align and the label-pair calls).
  absl::StatusOr<int> RosterIndex(const std::string& party, const std::string& run_id) const;
  bool horizontal() const { return config_.topology() == v1::Topology::horizontal; }
  // The report on the published table against the run's released statistics, beside it.
  absl::Status WriteReleasedFidelity(const CsvTable& published) const;
  // The rounds the run trains (the plan's in the horizontal topology, where they follow
  // the users' caps).
  int64_t TotalRounds() const;
  // Horizontal Align: marks the party joined and answers, once every party has joined,
  // with the users of all parties.
  absl::StatusOr<v1::AlignResponse> JoinHorizontal(int index);
  std::vector<std::string> NotJoined() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Each registered party's users, in roster order.
  std::vector<int64_t> Populations() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Horizontal Register: the party's schema must equal every other registered one.
  absl::Status CheckSameSchema(int index, const v1::Schema& schema) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Orchestration steps; each returns the first error (timeouts name the party).
  absl::Status WaitForParties();
  absl::Status Train();
  absl::Status TrainHorizontal();
  // One horizontal round: the model and each party's number of users out (its share of the
  // round's users, by the parties' `populations`), every party's reports in, the step.
  absl::Status HorizontalRound(int64_t round, const std::vector<int64_t>& populations);
  // After a horizontal round: the model's checkpoint when due (synchronously: it is small).
  absl::Status AfterHorizontalRound(int64_t next_round);
  // After round `done` - 1 of a run that started at `first_round`: status_'s round, rate and
  // ETA; true when a progress line is due.
  bool RecordProgress(int64_t done, int64_t first_round, double elapsed_seconds) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Restores the checkpoint (resume) or writes round 0's; returns the first round to run.
  absl::StatusOr<int64_t> StartFromCheckpoint();
  // The rows the curator publishes: output.rows, or one per aligned record.
  int64_t PublishedRows() const ABSL_LOCKS_EXCLUDED(mu_);
  // What one checkpoint write puts on disk: the private state and the publishable model
  // (G, or the horizontal autoencoder).
  struct SavedState {
    std::string checkpoint;  // SaveCuratorState, HorizontalModel::Save
    std::string generator;   // SavePublishedGenerator, HorizontalModel::SavePublished
  };
  static absl::StatusOr<SavedState> SaveState(CuratorModel& model);
  static SavedState SaveState(const HorizontalModel& model);
  // dpsgd: the key of D_s's noise, read back from the checkpoint directory when
  // resuming, else drawn from the OS (written there, 0600, by StartFromCheckpoint).
  absl::Status LoadOrDrawNoiseKey();
  // After round `next_round` - 1: copies the state into snapshot_model_ and, in the
  // background (checkpointer_) while the next round runs, serializes the copy and, when
  // due (checkpoint_every), writes it; the bytes are kept for a checkpoint at shutdown.
  absl::Status AfterRound(int64_t next_round);
  // Writes the checkpoint, then the generator artefact beside it (generator_artefact.h).
  absl::Status WriteCheckpointState(int64_t next_round, const SavedState& state);
  // Waits for a write in flight, then writes the last completed round's state if it is
  // newer than the durable one.
  void CheckpointAtShutdown();
  // The reply's place in the run (increasing), or -1 if it names no valid position.
  int64_t ReplyOrdinal(const v1::PartyMessage& message) const;
  // One critic step. The first of a round computes and sends its tasks; every step
  // sends the next step's tasks (the last: the generator round's) before it returns.
  absl::Status CriticStep(int64_t round, int64_t step, bool first, bool last);
  // Sends each party its slice as `step`'s critic task, or (step -1) generator task.
  void SendTasks(int64_t round, int64_t step, const std::vector<at::Tensor>& slices);
  absl::Status GeneratorStep(int64_t round);
  v1::CuratorMessage Envelope(int64_t round, int64_t step) const;
  // Receives the next message of `party` with payload `expected` for (round, step),
  // answering malformed or unexpected messages with a ProtocolError and waiting on.
  absl::StatusOr<v1::PartyMessage> Expect(int party, v1::PartyMessage::PayloadCase expected,
                                          int64_t round, int64_t step);
  absl::Status CheckTensor(const v1::Tensor& tensor, int64_t cols, const std::string& name) const;
  void Fail(const absl::Status& status);
  // Before training: logs `reason`, cancels every wait of the run with it and returns it.
  absl::Status FailRun(absl::Status reason);
  // Once alignment fixed the record count: the run's privacy plan (the same every
  // party resolves), refused if it exceeds the budgets; parties attest against it.
  absl::Status PlanPrivacy(int64_t records);
  // The output and conditioning settings against the registered schemas (sets
  // publication_temperature_).
  absl::Status CheckOutputFitsSchemas();
  // The parties' registered encoders in roster order (takes mu_).
  std::vector<const TableEncoder*> Encoders() const;
  // Each observer's ε after `rounds` rounds into status_ (and the party view's).
  void UpdateEpsilonSpent(int64_t rounds) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const v1::CuratorConfig config_;
  const bool resume_;
  const std::vector<std::string> roster_;
  SessionHub hub_;
  PsiExchange psi_;
  ReleasedStatistics released_;
  StepProfile profile_;
  const absl::Time join_deadline_;
  // Orchestrator thread only.
  std::string data_digest_;
  // Rounds below it are in the durable checkpoint; advanced by checkpointer_ once a
  // write is on disk (parties may then forget replies of earlier rounds).
  std::atomic<int64_t> durable_round_{0};
  // The last completed round's state: copied on this thread, serialized by checkpointer_'s
  // job (which alone touches them until it is awaited).
  std::unique_ptr<CuratorModel> snapshot_model_;
  int64_t snapshot_round_ = -1;        // round of snapshot_
  std::shared_ptr<const SavedState> snapshot_;
  // The public settings of the generator artefact (its round set at each write).
  v1::GeneratorHeader generator_header_;
  std::vector<int64_t> consumed_;      // per party: ordinal of the last reply used
  // Horizontal: per party, the users asked of it this round, and the model's size.
  std::vector<int64_t> asked_;
  int64_t horizontal_parameters_ = 0;

  mutable absl::Mutex mu_;
  std::vector<std::optional<v1::RegisterRequest>> registrations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<TableEncoder>> encoders_ ABSL_GUARDED_BY(mu_);
  // The number of records every party holds once alignment is done, or why the run
  // cannot train on them.
  std::optional<absl::StatusOr<int64_t>> intersection_size_ ABSL_GUARDED_BY(mu_);
  // Set by PlanPrivacy: the plan, or why the curator could not plan.
  std::optional<absl::StatusOr<v1::PrivacyPlan>> plan_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> attested_ ABSL_GUARDED_BY(mu_);  // per party: its plan matched
  std::vector<bool> joined_ ABSL_GUARDED_BY(mu_);    // horizontal, per party: past the join
  // Set with the intersection when training.label_column is: the exchange, or why the
  // roster cannot release label pairs.
  std::optional<absl::StatusOr<std::unique_ptr<LabelPairExchange>>> label_exchange_ ABSL_GUARDED_BY(mu_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mu_);
  v1::StatusResponse status_ ABSL_GUARDED_BY(mu_);
  // Each party's own releases so far (every party runs the same calibrated noise);
  // unset where the run makes no DP claim.
  std::optional<double> party_epsilon_spent_ ABSL_GUARDED_BY(mu_);
  double last_critic_loss_ ABSL_GUARDED_BY(mu_) = 0;
  std::string noise_key_;  // dpsgd: D_s's noise key, set before training starts
  // Set by PlanPrivacy: D_s sees released features alone, so its loss may be shown.
  bool publishes_critic_loss_ = false;  // for the curator's own log
  // Set by PlanPrivacy before training starts (the orchestrator's copy of plan_).
  v1::PrivacyPlan privacy_plan_;

  absl::Mutex model_mu_;  // the orchestrator and Synthesize share the model
  std::unique_ptr<CuratorModel> model_ ABSL_GUARDED_BY(model_mu_);
  std::unique_ptr<HorizontalModel> horizontal_model_ ABSL_GUARDED_BY(model_mu_);  // horizontal only
  // output.label_temperature by G's block offset (PublicationTemperatures).
  std::map<int, double> publication_temperature_ ABSL_GUARDED_BY(model_mu_);
  BackgroundTask slicer_;  // the next critic step's slices, computed while D_s updates
  BackgroundTask checkpointer_;  // the checkpoint write in flight; declared last: joined first
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_CURATOR_CORE_H_
