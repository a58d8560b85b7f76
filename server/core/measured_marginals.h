#ifndef VFSYNTH_SERVER_CORE_MEASURED_MARGINALS_H_
#define VFSYNTH_SERVER_CORE_MEASURED_MARGINALS_H_

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/gan/marginal_target.h"
#include "common/marginals/central_measurement.h"
#include "common/nn/networks.h"
#include "server/core/curator_protocol.h"
#include "server/core/party_inbox.h"
#include "server/core/psi_exchange.h"

namespace vfsynth {

// The measured-marginals mode's protocol (privacy.mode marginals; docs/protocol.md,
// "Measured marginals"): the parties align their records by PSI, the plan's histograms
// are measured once (each party's own; each pair of parties' cross histograms by packed
// Paillier, the lists between them sealed and only relayed here), and G is fitted to
// the released counts alone, each fit step a round. The measured counts are checkpointed
// with G, so a resumed curator never measures again.
class MeasuredMarginals : public CuratorProtocol {
 public:
  explicit MeasuredMarginals(const v1::CuratorConfig& config);
  ~MeasuredMarginals() override;

  void Bind(CuratorRun* run) override;
  absl::Status CheckAlign(int party, const v1::AlignRequest& request,
                          const v1::RegisterRequest& registration) const override;
  // PSI; the aligned answer also lists every party's columns, which the plan is made of.
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
  // Measures (unless the checkpoint holds the counts), then fits G from `first_round`.
  absl::Status Train(int64_t first_round) override;
  absl::StatusOr<CsvTable> Sample(int64_t rows) override;
  void Cancel(const absl::Status& reason) override;

  // Tests only (a curator that tampers with what it sends and relays): every task goes
  // through `hook`, and the tasks it returns are sent in its place, in order.
  using RelayHook = std::function<std::vector<v1::MarginalsTask>(int party, v1::MarginalsTask)>;
  void set_relay_hook_for_testing(RelayHook hook) { relay_hook_ = std::move(hook); }
  // The released counts per histogram (plan order), once measured.
  const std::vector<std::vector<int64_t>>& counts_for_testing() const { return counts_; }

 private:
  // The measurement exchange: every task out, every answer in, counts_ filled.
  absl::Status Measure();
  // Sends `task` to `party` as step `step`, then the answer of kind `expected`.
  void SendTask(int party, int64_t step, v1::MarginalsTask task);
  absl::StatusOr<v1::PartyMessage> Expect(int party, v1::PartyMessage::PayloadCase expected,
                                          int64_t step, const PartyInbox::CheckPayload& check);
  // Takes a party's counts of `histograms` into counts_, checked for their number.
  absl::Status TakeCounts(const v1::MeasuredCounts& answer, const std::vector<int>& histograms);
  absl::StatusOr<MarginalTarget> Target() const;
  std::vector<const TableEncoder*> Encoders() const;
  // The registered parties' one-hot columns, as the plan lists them.
  marginals::MeasuredLayout Layout() const;

  const v1::CuratorConfig config_;
  CuratorRun* run_ = nullptr;
  PsiExchange psi_;
  std::unique_ptr<PartyInbox> inbox_;
  RelayHook relay_hook_;
  // Orchestrator thread only.
  v1::PrivacyPlan plan_;
  std::vector<std::vector<int64_t>> counts_;  // per histogram; empty until measured
  std::unique_ptr<torch::optim::Adam> optimizer_;

  absl::Mutex model_mu_;  // the orchestrator and Sample share G
  std::optional<Generator> generator_ ABSL_GUARDED_BY(model_mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_MEASURED_MARGINALS_H_
