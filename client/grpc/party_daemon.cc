#include "client/grpc/party_daemon.h"

#include <utility>

#include "client/core/horizontal_party_core.h"
#include "client/core/marginals_party_core.h"
#include "client/core/vertical_party_core.h"
#include "client/grpc/grpc_curator_link.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

absl::StatusOr<std::unique_ptr<PartyProtocol>> ProtocolFor(const v1::PartyConfig& config,
                                                           bool resume) {
  if (config.topology() == v1::Topology::horizontal)
    return HorizontalPartyCore::Create(config, resume);
  if (config.privacy().mode() == v1::PrivacyConfig::marginals)
    return MarginalsPartyCore::Create(config, resume);
  return VerticalPartyCore::Create(config, resume);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PartyDaemon>> PartyDaemon::BuildAndStart(Options options) {
  std::unique_ptr<PartyDaemon> daemon(new PartyDaemon());
  ASSIGN_OR_RETURN(daemon->protocol_, ProtocolFor(options.config, options.resume));
  auto link = std::make_unique<GrpcCuratorLink>(options.config);
  daemon->session_ = std::make_unique<PartySession>(std::move(options.config),
                                                    daemon->protocol_.get(), std::move(link));
  return daemon;
}

}  // namespace vfsynth
