#ifndef VFSYNTH_SERVER_CORE_HORIZONTAL_ROUNDS_H_
#define VFSYNTH_SERVER_CORE_HORIZONTAL_ROUNDS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/curator_protocol.h"
#include "server/core/party_inbox.h"

namespace vfsynth {

class HorizontalModel;

// The horizontal topology's protocol (docs/horizontal.md): parties holding the same
// columns about different users join with their populations; each round broadcasts the
// global autoencoder, asks each party for its share of the round's users (signds) or its
// own sample (dpfedavg), and steps the model on their reports or noised sums.
class HorizontalRounds : public CuratorProtocol {
 public:
  explicit HorizontalRounds(const v1::CuratorConfig& config);
  ~HorizontalRounds() override;

  void Bind(CuratorRun* run) override;
  // Every party of a horizontal run holds the same columns, and users within its rows.
  absl::Status Admit(int party, const v1::RegisterRequest& request) const override;
  void DescribeRun(v1::RegisterResponse* response) const override;
  absl::Status CheckAlign(int party, const v1::AlignRequest& request,
                          const v1::RegisterRequest& registration) const override;
  // The join: answers once every party has joined, with the users of all parties.
  absl::StatusOr<v1::AlignResponse> Align(int party, const v1::AlignRequest& request) override;
  absl::Status AcceptRecords(int64_t records) override;
  bool aligned(int party) const override;
  std::string DescribeWaiting() const override;

  absl::StatusOr<v1::PrivacyPlan> Plan(int64_t records) override;
  void LogPlan(const v1::PrivacyPlan& plan, const std::string& digest) const override;
  // As many rows as the parties hold.
  int64_t DefaultPublishedRows(const v1::PrivacyPlan& plan) const override;

  absl::Status Prepare(const v1::PrivacyPlan& plan) override;
  absl::StatusOr<SavedState> Save() override;
  absl::Status Restore(const std::string& payload) override;
  absl::Status Train(int64_t first_round) override;

  absl::StatusOr<CsvTable> Sample(int64_t rows) override;
  void Cancel(const absl::Status& reason) override;

  const HorizontalModel* model_for_testing() ABSL_NO_THREAD_SAFETY_ANALYSIS { return model_.get(); }

 private:
  // One round: the model and each party's number of users out (its share of the round's
  // users, by the parties' `populations`), every party's reports in, the step.
  absl::Status Round(int64_t round, const std::vector<int64_t>& populations);
  // After a round: the model's checkpoint when due (synchronously: it is small).
  absl::Status AfterRound(int64_t next_round);
  std::vector<std::string> NotJoined() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const v1::CuratorConfig config_;
  CuratorRun* run_ = nullptr;
  std::unique_ptr<PartyInbox> inbox_;
  // Orchestrator thread only: the plan's rounds, per party the users asked of it this
  // round, and the model's size.
  int64_t rounds_ = 0;
  std::vector<int64_t> asked_;
  int64_t parameters_ = 0;

  mutable absl::Mutex mu_;
  std::vector<bool> joined_ ABSL_GUARDED_BY(mu_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mu_);

  absl::Mutex model_mu_;  // the orchestrator and Sample share the model
  std::unique_ptr<HorizontalModel> model_ ABSL_GUARDED_BY(model_mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_HORIZONTAL_ROUNDS_H_
