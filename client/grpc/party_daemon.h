#ifndef VFSYNTH_CLIENT_GRPC_PARTY_DAEMON_H_
#define VFSYNTH_CLIENT_GRPC_PARTY_DAEMON_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/core/party_protocol.h"
#include "client/core/party_session.h"
#include "common/base/step_profile.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// A party as its daemon runs it: the protocol of its configured topology
// (VerticalPartyCore, MarginalsPartyCore in privacy mode marginals, or
// HorizontalPartyCore, chosen once here) and its session with the
// curator over gRPC. Build with PartyDaemon::BuildAndStart; Run() blocks for the run.
class PartyDaemon {
 public:
  struct Options {
    v1::PartyConfig config;  // resolved
    bool resume = false;     // continue from the checkpoint in config.checkpoint_dir
  };

  // Loads the party's data for config.topology and links it to config.curator; an error
  // (bad data, a checkpoint in the way) means the party cannot take part.
  static absl::StatusOr<std::unique_ptr<PartyDaemon>> BuildAndStart(Options options);

  // Takes part in the run until it finished or failed.
  absl::Status Run() { return session_->Run(); }
  // Thread-safe: leaves the run (e.g. on SIGTERM); Run returns promptly.
  void Cancel() { session_->Cancel(); }
  // Per-message wall-clock breakdown (docs/performance.md).
  const StepProfile& profile() const { return protocol_->profile(); }

 private:
  PartyDaemon() = default;

  std::unique_ptr<PartyProtocol> protocol_;
  std::unique_ptr<PartySession> session_;  // drives protocol_; declared last: destroyed first
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_GRPC_PARTY_DAEMON_H_
