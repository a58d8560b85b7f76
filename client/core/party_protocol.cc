#include "client/core/party_protocol.h"

#include "absl/strings/str_cat.h"
#include "common/protocol/protocol_version.h"

namespace vfsynth {

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
