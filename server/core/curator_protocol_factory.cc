#include "server/core/curator_protocol_factory.h"

#include "server/core/horizontal_rounds.h"
#include "server/core/measured_marginals.h"
#include "server/core/vertical_rounds.h"

namespace vfsynth {

std::unique_ptr<CuratorProtocol> CuratorProtocolFor(const v1::CuratorConfig& config) {
  if (config.topology() == v1::Topology::horizontal)
    return std::make_unique<HorizontalRounds>(config);
  if (config.privacy().mode() == v1::PrivacyConfig::marginals)
    return std::make_unique<MeasuredMarginals>(config);
  return std::make_unique<VerticalRounds>(config);
}

}  // namespace vfsynth
