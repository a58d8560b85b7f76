#ifndef VFSYNTH_CLIENT_CORE_HORIZONTAL_PARTY_CORE_H_
#define VFSYNTH_CLIENT_CORE_HORIZONTAL_PARTY_CORE_H_

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/core/ledger_binding.h"
#include "client/core/party_protocol.h"
#include "client/core/plan_attestation.h"
#include "common/base/step_profile.h"
#include "common/data/party_data.h"
#include "common/federated/horizontal_party.h"
#include "common/federated/wae_table.h"
#include "common/privacy/ledger.h"
#include "common/privacy/participation_ledger.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth {

// A party of the horizontal topology (docs/horizontal.md), with no gRPC types: its rows
// grouped into users, its ledger, and its answers to the curator's rounds. Under signds
// only SignDS reports leave it: per drawn user one coordinate index and one sign, after
// the user's participation is on its participation ledger. Under dpfedavg only one noised
// sum a round leaves it, after the round is charged to its privacy ledger.
//
// Restarts: a round's answer is a function of the broadcast model, the ledger and the
// party secret (HorizontalParty::Answer, AnswerSum), so a round asked again after a crash,
// a reconnect or a resumed curator is answered with the same release and charges nothing
// twice. The secret is kept in checkpoint_dir (0600) with the ledger's binding; --resume
// reads them back and refuses a missing ledger, another one or an older copy.
class HorizontalPartyCore : public PartyProtocol {
 public:
  // Loads the party's data (config must be resolved, topology horizontal).
  static absl::StatusOr<std::unique_ptr<HorizontalPartyCore>> Create(const v1::PartyConfig& config,
                                                                     bool resume = false);

  v1::Topology topology() const override { return v1::Topology::horizontal; }

  v1::RegisterRequest MakeRegisterRequest() const override;
  absl::Status AcceptRegistration(const v1::RegisterResponse& response) override;
  // One Align call without elements: its answer, once every party registered, carries the
  // users of all parties (the run's plan needs them).
  absl::StatusOr<v1::AlignRequest> MakeAlignRequest() override;
  absl::StatusOr<std::optional<v1::AlignRequest>> AnswerAlign(
      const v1::AlignResponse& response) override;
  v1::AttestPlanRequest MakeAttestPlanRequest() const override;
  v1::AttestPlanRequest MakeRefusal(const absl::Status& reason) const override;
  // Once the plans match: keeps the secret and opens the participation ledger.
  absl::Status AcceptCuratorPlan(const v1::AttestPlanResponse& response) override;
  v1::PartyMessage MakeHello() const override;
  const StepProfile& profile() const override { return profile_; }

  // The secret this party's draws derive from (PartyProtocol::set_party_secret); a run
  // reproducing TrainHorizontalReference sets it before registering.
  void set_party_secret(std::string secret) override { party_secret_ = std::move(secret); }
  const v1::PrivacyPlan& privacy_plan() const override { return plan_; }
  // dpfedavg: the ledger's ε; signds: the most any user spent.
  double epsilon_spent() const override;
  int64_t users() const { return static_cast<int64_t>(users_.rows.size()); }
  // signds: the users' participation; dpfedavg: the rounds' charges (the other is null).
  const privacy::ParticipationLedger* ledger() const { return ledger_.get(); }
  const privacy::PrivacyLedger* privacy_ledger() const { return privacy_ledger_.get(); }

 private:
  HorizontalPartyCore(v1::PartyConfig config, PartyData data, PlanAttestation attestation,
                      bool resume);
  bool IsRoundMessage(v1::CuratorMessage::PayloadCase payload) const override {
    return payload == v1::CuratorMessage::kHorizontalTask;
  }
  // A horizontal task: this party's answer for the round's drawn users.
  absl::StatusOr<std::vector<v1::PartyMessage>> HandleRound(
      const v1::CuratorMessage& message) override;
  // Logs what the run spent of this party's budget.
  absl::Status Finish(const v1::Finished& finished) override;
  // dpfedavg: the round charged, then its noised sum (recorded against the charge).
  absl::Status AnswerWithSum(int64_t round, const torch::Tensor& global, v1::PartyMessage* reply);
  // Once the plans match: the ledger of the plan's mode, refused when a fresh start finds
  // it holding answers (a new secret would draw and release them again uncounted), and
  // on resume when it is missing or not the one the kept binding names (or an older copy).
  absl::Status OpenLedger();
  // The ledger's id and records, kept in checkpoint_dir before the secret and after
  // every round's ledger writes, before the answer leaves.
  LedgerBinding CurrentBinding() const;
  absl::Status KeepBinding() const;
  absl::Status CheckKeptBinding() const;
  bool dp_fedavg() const { return options_.dp_fedavg.has_value(); }
  // The plan once the run's users are known; an error if it cannot be made.
  absl::Status PlanPrivacy(int64_t users);

  const v1::PartyConfig config_;
  const bool resume_;
  PartyData data_;
  // This party's signed statement of its plan, and the check of the others'.
  PlanAttestation attestation_;
  UserRows users_;
  std::string party_secret_;
  // From the curator's registration answer.
  int parties_ = 0;
  std::vector<std::string> roster_;
  v1::HorizontalConfig horizontal_;
  v1::TrainingConfig training_;
  // Set once alignment told the run's users.
  v1::PrivacyPlan plan_;
  HorizontalRoundOptions options_;
  int64_t parameters_ = 0;
  std::unique_ptr<privacy::ParticipationLedger> ledger_;
  std::unique_ptr<privacy::PrivacyLedger> privacy_ledger_;
  std::unique_ptr<HorizontalParty> party_;
  int64_t answered_ = 0;  // users this process answered for (progress)
  absl::Time started_ = absl::InfinitePast();
  StepProfile profile_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_HORIZONTAL_PARTY_CORE_H_
