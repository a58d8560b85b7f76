#include "client/core/party_protocol.h"

#include "absl/strings/str_cat.h"
#include "common/base/party_name.h"
#include "common/base/status_macros.h"
#include "common/nn/torch_boundary.h"
#include "common/privacy/privacy_plan.h"
#include "common/protocol/protocol_version.h"

namespace vfsynth {

absl::StatusOr<std::vector<v1::PartyMessage>> PartyProtocol::Handle(
    const v1::CuratorMessage& message) {
  if (!run_.aligned()) return absl::FailedPreconditionError("round message before alignment");
  if (!run_.plan_attested())
    return absl::FailedPreconditionError("round message before the privacy plans matched");
  if (message.run_id() != run_.id()) {
    return absl::InvalidArgumentError(absl::StrCat("message for run '", message.run_id(), "'"));
  }
  if (IsRoundMessage(message.payload_case())) {
    return CatchLibTorch<std::vector<v1::PartyMessage>>([&] { return HandleRound(message); });
  }
  switch (message.payload_case()) {
    case v1::CuratorMessage::kFinished:
      RETURN_IF_ERROR(Finish());
      run_.Finish(message.finished());
      return std::vector<v1::PartyMessage>();
    case v1::CuratorMessage::kError:
      return absl::AbortedError(
          absl::StrCat("curator rejected this party's message: ", message.error().message()));
    default:
      return absl::InvalidArgumentError(absl::StrCat("unexpected curator message payload ",
                                                     message.payload_case(), " in a ",
                                                     v1::Topology_Name(topology()), " run"));
  }
}

v1::AttestPlanRequest AttestPlanRequestOf(const std::string& run_id, const std::string& party,
                                          const v1::PrivacyPlan& plan,
                                          const std::string& statement) {
  v1::AttestPlanRequest request;
  request.set_run_id(run_id);
  request.set_party(party);
  *request.mutable_plan() = plan;
  request.set_statement(statement);
  return request;
}

absl::Status CheckAttestedPlan(const std::string& party, const v1::PrivacyPlan& plan,
                               const PlanAttestation& attestation,
                               const std::vector<std::string>& roster,
                               const v1::AttestPlanResponse& response) {
  RETURN_IF_ERROR(
      CheckSamePlan(plan, absl::StrCat("party '", party, "'"), response.plan(), "the curator"));
  return attestation.CheckOthers(roster, response.statements());
}

v1::AttestPlanRequest RefusalOf(const std::string& run_id, const std::string& party,
                                const absl::Status& reason) {
  v1::AttestPlanRequest request;
  request.set_run_id(run_id);
  request.set_party(party);
  request.set_refusal(reason.message().empty() ? reason.ToString() : std::string(reason.message()));
  return request;
}

v1::PartyMessage HelloOf(const std::string& run_id, const std::string& party,
                         int64_t committed_step) {
  v1::PartyMessage hello;
  hello.set_run_id(run_id);
  hello.mutable_hello()->set_party(party);
  hello.mutable_hello()->set_protocol_version(kProtocolVersion);
  hello.mutable_hello()->set_committed_step(committed_step);
  return hello;
}

absl::Status CheckRegisterResponse(const v1::RegisterResponse& response, v1::Topology topology) {
  if (response.protocol_version() != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrCat("curator speaks protocol version ",
                                                      response.protocol_version(), ", this party ",
                                                      kProtocolVersion));
  }
  if (response.run_id().empty()) return absl::InvalidArgumentError("curator sent no run id");
  // Two roster places with one name would have a party take its own list for its
  // predecessor's.
  RETURN_IF_ERROR(ValidateRoster({response.parties().begin(), response.parties().end()},
                                 "the curator's roster:"));
  if (response.topology() != topology) {
    return absl::FailedPreconditionError(
        absl::StrCat("the curator runs topology '", v1::Topology_Name(response.topology()),
                     "' but this party is configured for '", v1::Topology_Name(topology), "'"));
  }
  return absl::OkStatus();
}

}  // namespace vfsynth
