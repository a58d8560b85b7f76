#include "client/core/party_protocol.h"

#include "absl/strings/str_cat.h"
#include "common/protocol/protocol_version.h"

namespace vfsynth {

v1::AttestPlanRequest AttestPlanRequestOf(const std::string& run_id, const std::string& party,
                                          const v1::PrivacyPlan& plan) {
  v1::AttestPlanRequest request;
  request.set_run_id(run_id);
  request.set_party(party);
  *request.mutable_plan() = plan;
  return request;
}

v1::AttestPlanRequest RefusalOf(const std::string& run_id, const std::string& party, const absl::Status& reason) {
  v1::AttestPlanRequest request;
  request.set_run_id(run_id);
  request.set_party(party);
  request.set_refusal(reason.message().empty() ? reason.ToString() : std::string(reason.message()));
  return request;
}

absl::Status CheckRegisterResponse(const v1::RegisterResponse& response, v1::Topology topology) {
  if (response.protocol_version() != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrCat("curator speaks protocol version ", response.protocol_version(),
                                                      ", this party ", kProtocolVersion));
  }
  if (response.run_id().empty()) return absl::InvalidArgumentError("curator sent no run id");
  if (response.topology() != topology) {
    return absl::FailedPreconditionError(
        absl::StrCat("the curator runs topology '", v1::Topology_Name(response.topology()),
                     "' but this party is configured for '", v1::Topology_Name(topology), "'"));
  }
  return absl::OkStatus();
}

}  // namespace vfsynth
