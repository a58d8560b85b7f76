#ifndef VFSYNTH_SERVER_CORE_CURATOR_PROTOCOL_FACTORY_H_
#define VFSYNTH_SERVER_CORE_CURATOR_PROTOCOL_FACTORY_H_

#include <memory>

#include "server/core/curator_protocol.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// The protocol a run of `config` (resolved) drives: HorizontalRounds in the horizontal
// topology, MeasuredMarginals in privacy mode marginals, VerticalRounds otherwise. The
// one place the choice is made: the curator daemon and the audit's shadow runs both
// take it from here.
std::unique_ptr<CuratorProtocol> CuratorProtocolFor(const v1::CuratorConfig& config);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_CURATOR_PROTOCOL_FACTORY_H_
