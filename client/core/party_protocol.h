#ifndef VFSYNTH_CLIENT_CORE_PARTY_PROTOCOL_H_
#define VFSYNTH_CLIENT_CORE_PARTY_PROTOCOL_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/core/party_run.h"
#include "client/core/plan_attestation.h"
#include "common/base/step_profile.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth {

// What a party's session (PartySession) drives, whatever the topology: its registration,
// alignment and privacy plan, and its answers on the Train stream. VerticalPartyCore is
// the vertical topology's, HorizontalPartyCore the horizontal one's. The run's state
// (PartyRun) and the curator messages every topology treats alike are kept here, so a
// protocol sees only its own round messages (HandleRound).
class PartyProtocol {
 public:
  virtual ~PartyProtocol() = default;

  virtual v1::Topology topology() const = 0;

  virtual v1::RegisterRequest MakeRegisterRequest() const = 0;
  // Again after a reconnect: the run and its settings must be the same.
  virtual absl::Status AcceptRegistration(const v1::RegisterResponse& response) = 0;
  // The first Align call, then the curator's answer to each: the next call, or nullopt
  // once this party knows the run's records.
  virtual absl::StatusOr<v1::AlignRequest> MakeAlignRequest() = 0;
  virtual absl::StatusOr<std::optional<v1::AlignRequest>> AnswerAlign(
      const v1::AlignResponse& response) = 0;
  // This party's privacy plan, to attest against the curator's; or, instead, that it will
  // not take part, for `reason`.
  virtual v1::AttestPlanRequest MakeAttestPlanRequest() const = 0;
  virtual v1::AttestPlanRequest MakeRefusal(const absl::Status& reason) const = 0;
  // Refuses a curator plan that differs from this party's; nothing leaves before it matched.
  virtual absl::Status AcceptCuratorPlan(const v1::AttestPlanResponse& response) = 0;

  // Label pairs, between the plan and Train: only a protocol that has them overrides these.
  virtual bool releases_label_pairs() const { return false; }
  virtual absl::StatusOr<v1::ShareLabelsRequest> MakeShareLabelsRequest() {
    return absl::FailedPreconditionError("this run has no label pairs");
  }
  virtual absl::StatusOr<std::optional<v1::LabelPairsRequest>> MakeLabelPairsRequest(
      const v1::ShareLabelsResponse& /*labels*/) {
    return absl::FailedPreconditionError("this run has no label pairs");
  }
  // The marginal release, after the label pairs: the kept draw, or none.
  virtual absl::StatusOr<std::optional<v1::MarginalsRequest>> MakeMarginalsRequest() {
    return std::nullopt;
  }

  virtual v1::PartyMessage MakeHello() const = 0;
  // One curator message in, the replies out. An error means the curator sent something
  // this party must not act on; the party then stops.
  absl::StatusOr<std::vector<v1::PartyMessage>> Handle(const v1::CuratorMessage& message);
  // Once Handle's replies have left: work of the next message that does not depend on it.
  // Nothing leaves and nothing is committed; skipping it changes no result.
  virtual absl::Status PrepareAhead() { return absl::OkStatus(); }

  // The curator's Finished message: whether it published, and its words.
  bool finished() const { return run_.finished(); }
  bool finish_succeeded() const { return run_.finish_succeeded(); }
  const std::string& finish_message() const { return run_.finish_message(); }
  // Per-message wall-clock breakdown (docs/performance.md).
  virtual const StepProfile& profile() const = 0;

  // The run's privacy plan once this party resolved it (empty before).
  virtual const v1::PrivacyPlan& privacy_plan() const = 0;
  // The ε this party's ledger holds as spent (0 where it keeps none: modes without a DP
  // claim, or before the ledger is open).
  virtual double epsilon_spent() const = 0;
  // Before MakeAlignRequest: the secret this party's draws and networks derive from,
  // instead of one drawn from the OS (a run reproducing a reference: tests, and the
  // audit's shadow models, whose starts are functions of their seeds).
  virtual void set_party_secret(std::string secret) = 0;
  // From any thread, when the party shuts down: long local work in progress (a
  // measurement's encryption) ends early and its call returns CANCELLED.
  virtual void Cancel() {}

 protected:
  PartyRun& run() { return run_; }
  const PartyRun& run() const { return run_; }

 private:
  // Whether `payload` is one of this topology's round messages (HandleRound's).
  virtual bool IsRoundMessage(v1::CuratorMessage::PayloadCase payload) const = 0;
  // A round message of this run, once the plans matched: the replies out.
  virtual absl::StatusOr<std::vector<v1::PartyMessage>> HandleRound(
      const v1::CuratorMessage& message) = 0;
  // The curator's Finished message, before the run counts as ended: what must be durable
  // by then is made so, and a success this party's state does not bear out is refused.
  virtual absl::Status Finish(const v1::Finished& finished) = 0;

  PartyRun run_;
};

// `text` (a party's error, for the curator) with each absolute path cut to its file name:
// the curator logs and shows a party's errors, and where a party keeps its files is its
// own business.
std::string WithoutLocalPaths(absl::string_view text);

// Party `party`'s AttestPlan request in run `run_id`: its plan and its signed statement
// (PlanAttestation), or a refusal for `reason`.
v1::AttestPlanRequest AttestPlanRequestOf(const std::string& run_id, const std::string& party,
                                          const v1::PrivacyPlan& plan,
                                          const std::string& statement);
v1::AttestPlanRequest RefusalOf(const std::string& run_id, const std::string& party,
                                const absl::Status& reason);
// Party `party`'s first message on the Train stream of run `run_id`: the last critic step it
// committed (-1 if it has none).
v1::PartyMessage HelloOf(const std::string& run_id, const std::string& party,
                         int64_t committed_step);

// The checks every party makes of the curator's answer to AttestPlan before it releases
// anything: the curator's plan is `plan`, party `party`'s own, and every other party of
// `roster` signed the same run, plan and secrets (PlanAttestation::CheckOthers).
absl::Status CheckAttestedPlan(const std::string& party, const v1::PrivacyPlan& plan,
                               const PlanAttestation& attestation,
                               const std::vector<std::string>& roster,
                               const v1::AttestPlanResponse& response);

// The checks every party makes of the curator's answer to Register: the protocol version,
// a run id, and the topology this party is configured for.
absl::Status CheckRegisterResponse(const v1::RegisterResponse& response, v1::Topology topology);

// Joins `run` to the run of the curator's (checked) answer to Register, whose settings
// digest to `settings_digest` (PartyRun::Join: true on the first join). On the first
// join the curator's start of the run is kept in `config`'s checkpoint_dir or, with
// `resume`, must be the start kept there (common/checkpoint/run_nonce.h).
absl::StatusOr<bool> JoinRun(const v1::RegisterResponse& response,
                             const std::string& settings_digest, const v1::PartyConfig& config,
                             bool resume, PartyRun* run);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_PARTY_PROTOCOL_H_
