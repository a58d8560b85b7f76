#ifndef VFSYNTH_CLIENT_CORE_MARGINALS_PARTY_CORE_H_
#define VFSYNTH_CLIENT_CORE_MARGINALS_PARTY_CORE_H_

#include <torch/torch.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "client/core/list_identity.h"
#include "client/core/party_protocol.h"
#include "client/core/plan_attestation.h"
#include "client/core/record_alignment.h"
#include "common/base/step_profile.h"
#include "common/data/party_data.h"
#include "common/marginals/party_measurement.h"
#include "common/privacy/ledger.h"
#include "common/secure/paillier.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth {

// A party of a measured-marginals run (privacy.mode marginals; docs/protocol.md,
// "Measured marginals"), with no gRPC types. It aligns its records as a vertical party
// does, resolves the plan from the columns the curator lists with the aligned positions,
// then answers the curator's measurement tasks: its own histograms counted with discrete
// Gaussian noise; for a pair of parties with cross histograms its records encrypted
// under its run's Paillier key (the lower party), the other's sums by value (the higher),
// and those sums decrypted and noised (the lower). Lists between parties travel sealed
// with a key derived from the parties' alignment key, which the curator never holds, and
// signed by their sender's mTLS key, which no other party holds.
//
// Every answer is kept under checkpoint_dir/marginals before it leaves, and the plan's
// charge is on the ledger before the first noisy one: a task asked again (a reconnect, a
// restart, a resumed curator) gets the same answer, never a fresh draw. It refuses a task
// before the plan matched, for a histogram the plan does not have, a list whose seal
// does not open or whose signature is not its sender's, a second, different list from
// the same sender, and sums that no honest sum could decrypt to. Its Paillier key is
// erased once every sum it decrypts is kept.
class MarginalsPartyCore : public PartyProtocol {
 public:
  static absl::StatusOr<std::unique_ptr<MarginalsPartyCore>> Create(const v1::PartyConfig& config,
                                                                    bool resume = false);

  v1::Topology topology() const override { return v1::Topology::vertical; }
  v1::RegisterRequest MakeRegisterRequest() const override;
  absl::Status AcceptRegistration(const v1::RegisterResponse& response) override;
  absl::StatusOr<v1::AlignRequest> MakeAlignRequest() override;
  // With the aligned positions: the rows in the canonical order and the run's plan,
  // resolved from the curator's columns once this party found its own among them.
  absl::StatusOr<std::optional<v1::AlignRequest>> AnswerAlign(
      const v1::AlignResponse& response) override;
  v1::AttestPlanRequest MakeAttestPlanRequest() const override;
  v1::AttestPlanRequest MakeRefusal(const absl::Status& reason) const override;
  absl::Status AcceptCuratorPlan(const v1::AttestPlanResponse& response) override;
  v1::PartyMessage MakeHello() const override;
  const StepProfile& profile() const override { return profile_; }

  const v1::PrivacyPlan& privacy_plan() const override { return plan_; }
  double epsilon_spent() const override;
  // The secret of this party's alignment list (PartyProtocol::set_party_secret).
  void set_party_secret(std::string secret) override { party_secret_ = std::move(secret); }
  void Cancel() override { stop_ = true; }
  // The aligned encoded rows (canonical order) and their encoder, once aligned.
  const torch::Tensor& aligned_table() const { return table_; }
  const TableEncoder& encoder() const { return data_.encoder; }
  const privacy::PrivacyLedger* ledger() const { return ledger_.get(); }
  // Tests only: every count exact (no noise drawn, nothing charged), so a run's release
  // can be compared with the plaintext counts. Never a setting.
  void set_noiseless_for_testing() { noiseless_ = true; }

  // A sealed list's purpose as this party seals and opens it: `purpose` bound to the plan
  // and the aligned records (empty binding before alignment).
  std::string ListPurpose(const std::string& purpose) const;

 private:
  MarginalsPartyCore(v1::PartyConfig config, std::string list_key, PartyData data,
                     std::unique_ptr<RecordAlignment> alignment, ListIdentity identity,
                     PlanAttestation attestation, bool resume);
  bool IsRoundMessage(v1::CuratorMessage::PayloadCase payload) const override {
    return payload == v1::CuratorMessage::kMarginalsTask;
  }
  absl::StatusOr<std::vector<v1::PartyMessage>> HandleRound(
      const v1::CuratorMessage& message) override;
  absl::Status Finish(const v1::Finished& finished) override;

  // The first alignment answer: rows reordered, own columns checked, plan resolved,
  // ledger opened, secret kept.
  absl::Status AcceptAlignment(
      const AlignedRows& aligned,
      const google::protobuf::RepeatedPtrField<v1::PlannedColumn>& columns);
  // The four tasks' answers (payloads only).
  absl::StatusOr<v1::PartyMessage> OwnAnswer(const v1::MarginalsTask::Own& task);
  absl::StatusOr<v1::PartyMessage> EncryptAnswer(const v1::MarginalsTask::Encrypt& task);
  absl::StatusOr<v1::PartyMessage> SumAnswer(const v1::MarginalsTask::Sum& task);
  absl::StatusOr<v1::PartyMessage> DecryptAnswer(const v1::MarginalsTask::Decrypt& task);

  // The answer kept as `name`, or `answer`'s, kept there (durably) before it is handed out;
  // a noisy one after the plan's charge and bound to it on the ledger.
  absl::StatusOr<v1::PartyMessage> Kept(
      const std::string& name, bool noisy,
      absl::FunctionRef<absl::StatusOr<v1::PartyMessage>()> answer);
  // The payload of `sealed` from `peer` for `purpose`, refused unless its seal opens for
  // this run, sender, receiver and purpose, and unless it is the first list `peer` sent
  // for `purpose` (its digest is kept before it is used).
  absl::StatusOr<std::string> OpenFrom(const std::string& peer, const std::string& purpose,
                                       const std::string& sealed);
  absl::StatusOr<std::string> SealFor(const std::string& peer, const std::string& purpose,
                                      const std::string& payload) const;
  // The cross pair of this party and `peer`, this party at `low` (true) or high.
  absl::StatusOr<marginals::CrossPair> PairWith(const std::string& peer, bool low) const;
  absl::StatusOr<int> PartyIndex(const std::string& name) const;
  // Per column of `pair`'s low layout, the histogram it forms with `high_column`, as a
  // refused sum names it.
  std::vector<std::string> HistogramLabels(const marginals::CrossPair& pair,
                                           int high_column) const;
  // The run's Paillier key: kept under the state directory, drawn on first use; refused
  // once erased if records were sent under it.
  absl::StatusOr<const secure::PaillierPrivateKey*> PaillierKey();
  // Once the counts of every pair this party decrypts are kept: the key cleared from
  // memory and its file removed.
  absl::Status ErasePaillierKeyIfDone();
  std::string StatePath(const std::string& name) const;

  const v1::PartyConfig config_;
  const bool resume_;
  PartyData data_;
  std::unique_ptr<RecordAlignment> alignment_;
  std::string list_key_;  // seals the lists between parties
  // Signs this party's lists and checks the others' (list_identity.h).
  ListIdentity identity_;
  // This party's signed statement of its plan and secrets, and the check of the others'.
  PlanAttestation attestation_;
  // The plan's digest and the aligned records' (fixed at the first alignment, kept in the
  // checkpoint directory): part of every sealed list's purpose.
  std::string binding_;
  std::string party_secret_;
  v1::TrainingConfig training_;
  std::vector<std::string> parties_;
  int index_ = -1;
  // From alignment on.
  torch::Tensor table_;            // aligned encoded rows, canonical order
  marginals::MeasuredLayout own_;  // this party's columns alone (its own offsets)
  int first_column_ = 0;
  v1::PrivacyPlan plan_;
  std::unique_ptr<privacy::PrivacyLedger> ledger_;
  std::optional<secure::PaillierPrivateKey> paillier_;
  // Serialised ciphertexts of the aligned records per set of own columns sent (EncryptAnswer).
  std::map<std::vector<int>, std::string> encrypted_records_;
  bool noiseless_ = false;
  std::atomic<bool> stop_{false};  // set once, by Cancel at shutdown; never reset
  StepProfile profile_;
};

// The key that seals the lists between the parties of a measured-marginals run: derived
// from their shared alignment key by HKDF under an info string no record id can be
// (secure::DeriveListKey), so it is neither that key nor any record's PSI token.
absl::StatusOr<std::string> MarginalsListKey(const std::string& alignment_key);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_MARGINALS_PARTY_CORE_H_
