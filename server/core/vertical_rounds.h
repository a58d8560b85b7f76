#ifndef VFSYNTH_SERVER_CORE_VERTICAL_ROUNDS_H_
#define VFSYNTH_SERVER_CORE_VERTICAL_ROUNDS_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/background_task.h"
#include "server/core/curator_protocol.h"
#include "server/core/label_pair_exchange.h"
#include "server/core/party_inbox.h"
#include "server/core/psi_exchange.h"
#include "server/core/released_statistics.h"

namespace at {
class Tensor;
}

namespace vfsynth {

class CuratorModel;

// The vertical topology's protocol (docs/architecture.md, "One round"): the parties
// align their records by PSI, may release label pairs and marginals, then each round
// runs n_critic critic steps and one generator step of the split GAN over their slices
// of G's output. The tasks of the next step are computed while D_s updates and sent as
// soon as they are ready, so the parties' work overlaps the curator's.
class VerticalRounds : public CuratorProtocol {
 public:
  explicit VerticalRounds(const v1::CuratorConfig& config);
  ~VerticalRounds() override;

  void Bind(CuratorRun* run) override;
  absl::Status CheckAlign(int party, const v1::AlignRequest& request,
                          const v1::RegisterRequest& registration) const override;
  absl::StatusOr<v1::AlignResponse> Align(int party, const v1::AlignRequest& request) override;
  absl::Status AcceptRecords(int64_t records) override;
  bool aligned(int party) const override { return psi_.Done(party); }
  std::string DescribeWaiting() const override;

  absl::StatusOr<v1::PrivacyPlan> Plan(int64_t records) override;
  void LogPlan(const v1::PrivacyPlan& plan, const std::string& digest) const override;
  int64_t DefaultPublishedRows(const v1::PrivacyPlan& plan) const override {
    return plan.records();
  }

  absl::Status Prepare(const v1::PrivacyPlan& plan) override;
  absl::StatusOr<SavedState> Save() override;
  absl::Status Restore(const std::string& payload) override;
  absl::Status Train(int64_t first_round) override;

  absl::StatusOr<CsvTable> Sample(int64_t rows) override;
  absl::StatusOr<std::optional<v1::ReleasedFidelity>> ReleasedReport(
      const CsvTable& published, const v1::PrivacyPlan& plan) const override;

  absl::StatusOr<v1::ShareLabelsResponse> ShareLabels(
      int party, const v1::ShareLabelsRequest& request) override;
  absl::Status ReleaseLabelPairs(int party, const v1::LabelPairsRequest& request) override;
  absl::Status ReleaseMarginals(int party, const v1::MarginalsRequest& request) override;

  void Cancel(const absl::Status& reason) override;

  // The model once Prepare ran (nullptr before).
  CuratorModel* model_for_testing() ABSL_NO_THREAD_SAFETY_ANALYSIS { return model_.get(); }

 private:
  // The label-pair exchange once alignment is done; FAILED_PRECONDITION if the run has
  // none (yet), or why it cannot have one.
  absl::StatusOr<LabelPairExchange*> label_exchange();
  // The output and conditioning settings against the registered schemas (sets
  // publication_temperature_).
  absl::Status CheckOutputFitsSchemas();
  // dpsgd: the key of D_s's noise, read back from the checkpoint directory when
  // resuming, else drawn from the OS and written there (0600).
  absl::Status LoadOrDrawNoiseKey();

  // One critic step. The first of a round computes and sends its tasks; every step
  // sends the next step's tasks (the last: the generator step's) before it returns.
  absl::Status CriticStep(int64_t round, int64_t step, bool first, bool last);
  absl::Status GeneratorStep(int64_t round);
  // Sends each party its slice as `step`'s critic task, or (step -1) generator task.
  void SendTasks(int64_t round, int64_t step, const std::vector<at::Tensor>& slices);
  // The state after round `next_round` - 1 copied, then written in the background.
  absl::Status AfterRound(int64_t next_round);
  // The next reply of `party` of kind `expected` for (round, step), its tensors checked.
  absl::StatusOr<v1::PartyMessage> Expect(int party, v1::PartyMessage::PayloadCase expected,
                                          int64_t round, int64_t step);
  // A reply's place in a round: its critic step, then the generator features, then
  // the slice gradient.
  std::optional<ReplyPosition> PositionOf(const v1::PartyMessage& message) const;
  absl::Status CheckTensor(const v1::Tensor& tensor, int64_t cols, const std::string& name) const;

  const v1::CuratorConfig config_;
  CuratorRun* run_ = nullptr;
  PsiExchange psi_;
  ReleasedStatistics released_;
  std::unique_ptr<PartyInbox> inbox_;
  // Set by Plan: D_s sees released features alone, so its loss may be shown.
  bool publishes_critic_loss_ = false;
  // Orchestrator thread only: the plan's shared critic noise, D_s's noise key (dpsgd),
  // the last critic loss for the progress line (only where publishes_critic_loss_).
  v1::PrivacyPlan plan_;
  std::string noise_key_;
  double last_critic_loss_ = 0;

  mutable absl::Mutex mu_;
  // Set with the records when training.label_column is: the exchange, or why the roster
  // cannot release label pairs.
  std::optional<absl::StatusOr<std::unique_ptr<LabelPairExchange>>> label_exchange_
      ABSL_GUARDED_BY(mu_);

  absl::Mutex model_mu_;  // the orchestrator and Sample share the model
  std::unique_ptr<CuratorModel> model_ ABSL_GUARDED_BY(model_mu_);
  // The last completed round's state: copied on the orchestrator thread, serialized by
  // the checkpoint job (which alone touches it until the job is awaited).
  std::unique_ptr<CuratorModel> snapshot_model_;
  // output.label_temperature by G's block offset (PublicationTemperatures).
  std::map<int, double> publication_temperature_ ABSL_GUARDED_BY(model_mu_);
  BackgroundTask slicer_;  // the next critic step's slices, computed while D_s updates
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_VERTICAL_ROUNDS_H_
