#include "client/core/party_protocol.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/base/party_name.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/run_nonce.h"
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
      RETURN_IF_ERROR(Finish(message.finished()));
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

std::string WithoutLocalPaths(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const bool starts_path =
        text[i] == '/' && (i == 0 || absl::ascii_isspace(static_cast<unsigned char>(text[i - 1])) ||
                           text[i - 1] == '\'' || text[i - 1] == '"' || text[i - 1] == '(' ||
                           text[i - 1] == '=');
    if (!starts_path) {
      out.push_back(text[i++]);
      continue;
    }
    size_t end = i;
    while (end < text.size() && !absl::ascii_isspace(static_cast<unsigned char>(text[end])) &&
           text[end] != '\'' && text[end] != '"' && text[end] != ')' && text[end] != ',' &&
           text[end] != ';') {
      ++end;
    }
    absl::string_view path = text.substr(i, end - i);
    // A sentence's colon or full stop after the path stays outside it.
    while (!path.empty() && (path.back() == ':' || path.back() == '.')) path.remove_suffix(1);
    const size_t slash = path.find_last_of('/');
    absl::StrAppend(&out, "<local>/", path.substr(slash + 1));
    i += path.size();
  }
  return out;
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
  request.set_refusal(WithoutLocalPaths(reason.message().empty() ? reason.ToString()
                                                                 : std::string(reason.message())));
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
  RETURN_IF_ERROR(CheckRunNonce(response.run_nonce()));
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

absl::StatusOr<bool> JoinRun(const v1::RegisterResponse& response,
                             const std::string& settings_digest, const v1::PartyConfig& config,
                             bool resume, PartyRun* run) {
  ASSIGN_OR_RETURN(const bool joined,
                   run->Join(response.run_id(), settings_digest, response.run_nonce()));
  if (!joined) return false;
  const std::string path = RunNoncePath(config.checkpoint_dir());
  ASSIGN_OR_RETURN(const std::optional<std::string> kept, KeptRunNonce(path, response.run_id()));
  if (resume && kept.has_value() && *kept != response.run_nonce()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--resume: the curator runs another start of run '", response.run_id(),
        "' than the one this party joined (nonce ", response.run_nonce().substr(0, 12),
        ", kept in ", path, ": ", kept->substr(0, 12),
        "): it was started afresh, or resumed another start's checkpoint. Resume the curator "
        "from this run's checkpoint_dir; if that is lost, start a new run (another run_id)"));
  }
  if (!kept.has_value() || *kept != response.run_nonce()) {
    RETURN_IF_ERROR(KeepRunNonce(path, response.run_id(), response.run_nonce()));
  }
  return true;
}

}  // namespace vfsynth
