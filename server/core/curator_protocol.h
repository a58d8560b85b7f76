#ifndef VFSYNTH_SERVER_CORE_CURATOR_PROTOCOL_H_
#define VFSYNTH_SERVER_CORE_CURATOR_PROTOCOL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "server/core/curator_run.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"
#include "vfsynth/v1/released_fidelity.pb.h"

namespace vfsynth {

// One way a run gets from its registered parties to a publishable model, behind the
// run lifecycle (CuratorCore): VerticalRounds (aligned records, split GAN rounds) and
// HorizontalRounds (joined user populations, federated autoencoder rounds). The core
// calls, in this order: Bind; Admit and CheckAlign/Align for each party's calls; then
// on its orchestrator thread Plan, Prepare, Save or Restore, Train; Sample and the
// release calls may come from any thread. Cancel may come at any time.
class CuratorProtocol {
 public:
  virtual ~CuratorProtocol() = default;

  // Once, before anything else: the run this protocol serves (outlives it).
  virtual void Bind(CuratorRun* run) = 0;

  // Checks a registration must pass beyond the common ones, against the parties registered
  // so far (run.registry; the same registration may come again after a reconnect). The core
  // calls it for one registration at a time.
  virtual absl::Status Admit(int /*party*/, const v1::RegisterRequest& /*request*/) const {
    return absl::OkStatus();
  }
  // The protocol's settings in the answer to Register.
  virtual void DescribeRun(v1::RegisterResponse* /*response*/) const {}

  // Checks an Align call against the party's registration, before anything is recorded.
  virtual absl::Status CheckAlign(int party, const v1::AlignRequest& request,
                                  const v1::RegisterRequest& registration) const = 0;
  // One Align call: blocks until this party's answer is ready. An answer with `aligned`
  // fixes the run's records; the core passes them to AcceptRecords once.
  virtual absl::StatusOr<v1::AlignResponse> Align(int party, const v1::AlignRequest& request) = 0;
  // Whether the run can go on with `records`, and what it prepares for them.
  virtual absl::Status AcceptRecords(int64_t records) = 0;
  virtual bool aligned(int party) const = 0;
  // The join timeout's error: who has not got past alignment.
  virtual std::string DescribeWaiting() const = 0;

  // The run's privacy plan (the same every party resolves) for `records`, before the
  // budget check; and its mode-specific log line(s).
  virtual absl::StatusOr<v1::PrivacyPlan> Plan(int64_t records) = 0;
  virtual void LogPlan(const v1::PrivacyPlan& plan, const std::string& digest) const = 0;
  // The rows published when output.rows is unset.
  virtual int64_t DefaultPublishedRows(const v1::PrivacyPlan& plan) const = 0;

  // After the plan was attested and every party connected: builds the model and waits
  // for what it needs before the first round (the label pairs).
  virtual absl::Status Prepare(const v1::PrivacyPlan& plan) = 0;
  // The state a checkpoint holds, and its restoration from one.
  virtual absl::StatusOr<SavedState> Save() = 0;
  virtual absl::Status Restore(const std::string& payload) = 0;
  // The rounds from `first_round` to the plan's last, each checkpointed when due.
  virtual absl::Status Train(int64_t first_round) = 0;

  // Rows drawn from the current model (FAILED_PRECONDITION before Prepare).
  virtual absl::StatusOr<CsvTable> Sample(int64_t rows) = 0;
  // The report on the published table against the run's releases, if it has any.
  virtual absl::StatusOr<std::optional<v1::ReleasedFidelity>> ReleasedReport(
      const CsvTable& /*published*/, const v1::PrivacyPlan& /*plan*/) const {
    return std::nullopt;
  }

  // Releases between the plan and the rounds: only a protocol that has them overrides these.
  virtual absl::StatusOr<v1::ShareLabelsResponse> ShareLabels(
      int /*party*/, const v1::ShareLabelsRequest& /*request*/) {
    return absl::FailedPreconditionError(
        "this run releases no label pairs (training.label_column is unset)");
  }
  virtual absl::Status ReleaseLabelPairs(int /*party*/, const v1::LabelPairsRequest& /*request*/) {
    return absl::FailedPreconditionError(
        "this run releases no label pairs (training.label_column is unset)");
  }
  virtual absl::Status ReleaseMarginals(int /*party*/, const v1::MarginalsRequest& /*request*/) {
    return absl::FailedPreconditionError(
        "this run has no marginal release (training.marginal_weight is 0)");
  }

  // Wakes every wait of the protocol with `reason`.
  virtual void Cancel(const absl::Status& reason) = 0;
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_CURATOR_PROTOCOL_H_
