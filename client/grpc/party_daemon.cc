#include "client/grpc/party_daemon.h"

#include <utility>

#include "client/core/party_protocol_factory.h"
#include "client/grpc/grpc_curator_link.h"
#include "common/base/status_macros.h"
#include "common/net/tls.h"

namespace vfsynth {

absl::StatusOr<std::unique_ptr<PartyDaemon>> PartyDaemon::BuildAndStart(Options options) {
  // Checked before the data is read: an expired certificate fails every dial unexplained.
  RETURN_IF_ERROR(CheckTlsFiles(options.config.tls(), options.config.plaintext()));
  std::unique_ptr<PartyDaemon> daemon(new PartyDaemon());
  ASSIGN_OR_RETURN(daemon->protocol_, PartyProtocolFor(options.config, options.resume));
  auto link = std::make_unique<GrpcCuratorLink>(options.config);
  daemon->session_ = std::make_unique<PartySession>(std::move(options.config),
                                                    daemon->protocol_.get(), std::move(link));
  return daemon;
}

}  // namespace vfsynth
