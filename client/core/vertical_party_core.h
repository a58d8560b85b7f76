#ifndef VFSYNTH_CLIENT_CORE_VERTICAL_PARTY_CORE_H_
#define VFSYNTH_CLIENT_CORE_VERTICAL_PARTY_CORE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/core/party_protocol.h"
#include "client/core/plan_attestation.h"
#include "client/core/record_alignment.h"
#include "common/base/step_profile.h"
#include "common/data/party_data.h"
#include "common/privacy/run_accounting.h"
#include "vfsynth/v1/checkpoint.pb.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth {

class CheckpointSlots;
class PartyDurability;
class PartyModel;
namespace privacy {
class PrivacyLedger;
struct RunShape;
}  // namespace privacy

// Secrets shared by the parties only: the real-batch sampling key and the HMAC key
// of the alignment tokens that put the aligned records in one order at every party
// (common/data/alignment.h; the tokens never leave the parties). File format: "sampling_secret=..."
// and "alignment_key=..." lines ('#' comments allowed); both required, each at least
// kMinSecretBytes bytes as written (the keys are used as written, not decoded).
inline constexpr size_t kMinSecretBytes = 32;
struct PartySecrets {
  std::string sampling_secret;
  std::string alignment_key;
};
absl::StatusOr<PartySecrets> LoadPartySecrets(const std::string& path);

// The party's logic with no gRPC types: builds its Register/Align requests, checks
// and applies the curator's answers, and turns each curator round message into its
// replies. Only slices, features and gradients leave; ids leave only blinded by the
// party's secret exponent (common/data/psi.h).
//
// Restarts (docs/operations.md, "Failure handling"): the critic state is committed to
// config.checkpoint_dir after every critic update, before anything computed from it
// leaves. A reply with fresh noise is journaled durably before it is sent; one without
// is recomputed identically from the committed state, or journaled and made durable
// before that state is replaced (JournalingOf). A curator message answered before is
// answered again with identical bytes; a critic update already committed is not applied
// twice. So a party never releases two different answers for one step, and never rolls
// back past something it released. PartyDurability orders all of this.
class VerticalPartyCore : public PartyProtocol {
 public:
  // Loads the party's data (config must be resolved). With `resume`, the party
  // continues from its checkpoint once aligned; without, an existing checkpoint is
  // an error (starting over would overwrite it).
  static absl::StatusOr<std::unique_ptr<VerticalPartyCore>> Create(const v1::PartyConfig& config,
                                                                   bool resume = false);
  ~VerticalPartyCore() override;

  v1::Topology topology() const override { return v1::Topology::vertical; }

  v1::RegisterRequest MakeRegisterRequest() const override;
  // Again after a reconnect: the run and its settings must be the same.
  absl::Status AcceptRegistration(const v1::RegisterResponse& response) override;
  // The first Align call: this party's own blinded list (hop 0). It derives from the
  // party secret, loaded (resuming) or kept for the run before the list leaves
  // (alignment_secret.h), so a resumed or restarted party sends the same list.
  absl::StatusOr<v1::AlignRequest> MakeAlignRequest() override;
  // The curator's answer to an Align call: the next call (the list it handed out,
  // blinded), or nullopt once the answer's aligned positions are accepted.
  absl::StatusOr<std::optional<v1::AlignRequest>> AnswerAlign(
      const v1::AlignResponse& response) override;
  // The rows at the curator's aligned positions, in the canonical order (by alignment
  // token): reorders the rows, builds the local critic and opens (or, resuming, restores)
  // its checkpoint. Again after a reconnect: the records must be the same.
  absl::Status AcceptAlignment(const v1::AlignedPositions& positions);
  // After alignment: this party's privacy plan, to attest against the curator's.
  v1::AttestPlanRequest MakeAttestPlanRequest() const override;
  // Instead of a plan: this party will not take part, for `reason`.
  v1::AttestPlanRequest MakeRefusal(const absl::Status& reason) const override;
  // Refuses a curator plan that differs from this party's (naming the setting); the
  // first match charges the marginal release. Nothing leaves the party before this.
  absl::Status AcceptCuratorPlan(const v1::AttestPlanResponse& response) override;
  // The secret this party's networks initialise from (PartyProtocol::set_party_secret).
  void set_party_secret(std::string secret) override { party_secret_ = std::move(secret); }
  v1::PartyMessage MakeHello() const override;

  // Label pairs (training.label_column), after alignment: true if the run has them.
  bool releases_label_pairs() const override { return !training_.label_column().empty(); }
  // The ShareLabels request: the noised labels if this party holds the label, else empty.
  absl::StatusOr<v1::ShareLabelsRequest> MakeShareLabelsRequest() override;
  // A party without the label: its label-pair tables against the labels the curator
  // returned; nullopt for the holder.
  absl::StatusOr<std::optional<v1::LabelPairsRequest>> MakeLabelPairsRequest(
      const v1::ShareLabelsResponse& labels) override;
  // With training.marginal_weight > 0: the marginal draw the ledger's key-0 charge covers
  // (the checkpoint's, resuming).
  absl::StatusOr<std::optional<v1::MarginalsRequest>> MakeMarginalsRequest() override;

  // Once Handle's replies have left, before waiting for the next message: the work of
  // the next message that does not depend on it (PartyModel::PrepareAhead). Nothing
  // leaves and nothing is committed; skipping it changes no result.
  absl::Status PrepareAhead() override;

  // Joint epsilon spent so far and planned for the whole run (0 where the run makes
  // no DP claim: none, vflgan).
  double epsilon_spent() const override;
  double epsilon_planned() const;
  const v1::PrivacyPlan& privacy_plan() const override { return plan_; }

  const std::string& name() const { return config_.name(); }
  PartyModel* model() { return model_.get(); }
  // The last critic update applied (-1 before the first, and before alignment).
  int64_t committed_step() const;
  // Per-message wall-clock breakdown (docs/performance.md).
  const StepProfile& profile() const override { return profile_; }

 private:
  VerticalPartyCore(v1::PartyConfig config, PartySecrets secrets, PartyData data,
                    PlanAttestation attestation, bool resume);
  // Restores the checkpoint (resume) or writes the initial one, and opens the journal
  // (durability_).
  absl::Status OpenCheckpoint();
  // The journal and the critic state's commits, from `state` holding `committed_step`.
  absl::Status OpenDurability(std::unique_ptr<CheckpointSlots> state, int64_t committed_step);
  v1::CheckpointHeader CheckpointHeader(int64_t step) const;
  bool IsRoundMessage(v1::CuratorMessage::PayloadCase payload) const override;
  // Round messages: position checks, then UpdateCritic or ReplyTo.
  absl::StatusOr<std::vector<v1::PartyMessage>> HandleRound(
      const v1::CuratorMessage& message) override;
  // Feature gradients: the critic step's update, applied once and committed.
  absl::Status UpdateCritic(const v1::CuratorMessage& message);
  // A question: the journaled reply or Answer, once it may leave.
  absl::StatusOr<v1::PartyMessage> ReplyTo(const v1::CuratorMessage& message);
  // Every sent reply journaled and the last state write landed.
  absl::Status Finish(const v1::Finished& finished) override;
  // Computes a reply that was never sent before, its ledger charge started first.
  absl::StatusOr<v1::PartyMessage> Answer(const v1::CuratorMessage& message);
  // Before a journaled reply is resent: recomputes the pending forward pass the next
  // curator message needs (the released values come from the journal, not from here).
  absl::Status RebuildPending(const v1::CuratorMessage& message);
  absl::Status CheckRoundMessage(const v1::CuratorMessage& message) const;
  // FAILED_PRECONDITION for a round outside the plan (CheckRoundMessage ties a critic
  // step to its round).
  absl::Status CheckWithinPlan(const v1::CuratorMessage& message) const;
  v1::PartyMessage Reply(const v1::CuratorMessage& to) const;
  // Resolves the run's privacy plan, refuses one over budget, opens the ledger
  // (refusing a fresh start on a charged one; none in modes without a DP claim) and
  // configures the model's sanitisation.
  absl::Status PlanPrivacy();
  // The party's ledger for this run (PlanPrivacy, in modes with a DP claim).
  absl::Status OpenLedger();
  // With training.marginal_weight > 0: the marginal target of the slice gradients, exact
  // in mode none, otherwise noised (resuming, the saved draw replaces this one, which
  // never left the party).
  absl::Status PlanMarginals();
  // The ledger's key-0 charge for the marginal release (and the label pairs'), after
  // the first checkpoint is durable and before any of it leaves, with the digest of the
  // marginal draw it covers (a resumed party's restored draw must be that one).
  absl::Status ChargeMarginalRelease();
  // That charge's ledger key (0 when there is none).
  int64_t MarginalReleaseKey() const;
  // Resuming: the checkpoint must name the open ledger, and the ledger hold at least
  // the charges it held when the checkpoint was committed.
  absl::Status CheckLedgerBinding(const v1::CheckpointHeader& header,
                                  const std::string& path) const;
  // Charges the critic step to the ledger before anything derived from its batch
  // leaves; RESOURCE_EXHAUSTED if the budget would be exceeded.
  absl::Status ChargeStep(int64_t step);
  // Ensemble modes: charges the round's sanitised slice gradients before they leave.
  absl::Status ChargeGeneratorRound(int64_t round);
  // Starts the ledger charge that covers the reply to `message` (none for a generator
  // task) in the background; BeforeReplyLeaves waits for it.
  absl::Status StartChargeOf(const v1::CuratorMessage& message);
  // The run as the accountant sees it (after PlanPrivacy).
  privacy::RunShape PrivacyShape() const;
  absl::Status Check(const v1::Tensor& tensor, int64_t cols, const std::string& name) const;

  // The party secret: party.secret when resuming; on a fresh start the run's kept
  // alignment secret or a new one kept there (party.secret too once aligned).
  absl::Status LoadOrDrawPartySecret();

  v1::PartyConfig config_;
  PartySecrets secrets_;
  // This party's alone (never sent, never shared): its networks' initialisation and,
  // in the ensemble modes, its shards. Kept in the checkpoint directory for --resume.
  std::string party_secret_;
  PartyData data_;
  std::unique_ptr<RecordAlignment> alignment_;
  // AcceptAlignment once the rows are known (a reconnect's answer changes nothing).
  absl::Status BuildFromAlignment(const AlignedRows& aligned);
  v1::ModelConfig model_config_;
  v1::TrainingConfig training_;
  std::unique_ptr<PartyModel> model_;
  std::vector<std::string> parties_;  // the curator's roster
  v1::PrivacyPlan plan_;  // set by PlanPrivacy
  // Why a resume read the older checkpoint slot, for the errors it may lead to.
  std::string damaged_slot_;
  // This party's signed statement of its plan and secrets, and the check of the others'.
  PlanAttestation attestation_;
  std::unique_ptr<privacy::PrivacyLedger> ledger_;
  const bool resume_;
  std::string data_digest_;   // of the aligned records and their encoded values
  const privacy::Mode mode_;  // config_'s resolved privacy mode
  StepProfile profile_;
  // From alignment on. Declared last, so its background jobs (a charge on ledger_, a
  // state write of model_) end first.
  std::unique_ptr<PartyDurability> durability_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_VERTICAL_PARTY_CORE_H_
