#include "client/core/party_protocol_factory.h"

#include "client/core/horizontal_party_core.h"
#include "client/core/marginals_party_core.h"
#include "client/core/vertical_party_core.h"

namespace vfsynth {

absl::StatusOr<std::unique_ptr<PartyProtocol>> PartyProtocolFor(const v1::PartyConfig& config,
                                                                bool resume) {
  if (config.topology() == v1::Topology::horizontal)
    return HorizontalPartyCore::Create(config, resume);
  if (config.privacy().mode() == v1::PrivacyConfig::marginals)
    return MarginalsPartyCore::Create(config, resume);
  return VerticalPartyCore::Create(config, resume);
}

}  // namespace vfsynth
