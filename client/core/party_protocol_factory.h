#ifndef VFSYNTH_CLIENT_CORE_PARTY_PROTOCOL_FACTORY_H_
#define VFSYNTH_CLIENT_CORE_PARTY_PROTOCOL_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "client/core/party_protocol.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// The party core a run of `config` (resolved) needs: HorizontalPartyCore in the
// horizontal topology, MarginalsPartyCore in privacy mode marginals, VerticalPartyCore
// otherwise. The one place the choice is made: the party daemon and the audit's shadow
// runs both take it from here. `resume` as each core's Create takes it.
absl::StatusOr<std::unique_ptr<PartyProtocol>> PartyProtocolFor(const v1::PartyConfig& config,
                                                                bool resume);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_PARTY_PROTOCOL_FACTORY_H_
