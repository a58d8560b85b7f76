#ifndef VFSYNTH_CLIENT_GRPC_PARTY_SESSION_H_
#define VFSYNTH_CLIENT_GRPC_PARTY_SESSION_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/core/party_core.h"
#include "vfsynth/v1/curator.grpc.pb.h"

namespace vfsynth {

// Thin gRPC client around PartyCore: dials the curator over mTLS, registers,
// aligns, then serves the Train stream until the curator says Finished. If the
// curator goes away (its stream breaks without Finished), the session redials for up
// to reconnect_timeout_seconds and rejoins: Register, Align and Hello again (the core
// checks the run and records are the same) and the curator resends its round.
class PartySession {
 public:
  PartySession(v1::PartyConfig config, PartyCore* core) : config_(std::move(config)), core_(core) {}

  // Runs the whole session; returns when training finished or failed.
  absl::Status Run();
  // Thread-safe: aborts a running session (e.g. on SIGTERM).
  void Cancel();

 private:
  // One connection: register, align, serve. Sets *streamed once a Train stream ran.
  absl::Status Session(bool* streamed);
  absl::Status Serve(v1::Curator::Stub& stub, bool* streamed);
  // Record alignment: one Align call per hop, from this party's own list (hop 0) until
  // the curator answers with its aligned positions.
  absl::Status Align(v1::Curator::Stub& stub);
  // Tells the curator this party will not take part, so the run fails at once for every
  // party instead of at the join timeout. Best effort: `reason` is what the party reports.
  void Refuse(v1::Curator::Stub& stub, const absl::Status& reason);
  // Label pairs (training.label_column): the labels out or in, then this party's tables.
  absl::Status ReleaseLabelPairs(v1::Curator::Stub& stub);
  // Sleeps before redialling; false if the session was cancelled meanwhile.
  bool Backoff(absl::Duration delay);
  bool Cancelled();
  // Makes `context` the call Cancel() cancels; false if the session already is cancelled.
  bool BeginCall(grpc::ClientContext* context);
  // Ends it; false if the session was cancelled meanwhile.
  bool EndCall();
  // One unary call (`rpc` issues it on `context`) that a signal can cut short.
  absl::Status Call(grpc::ClientContext* context, double timeout_seconds, const std::string& what,
                    const std::function<grpc::Status()>& rpc);

  v1::PartyConfig config_;
  PartyCore* core_;
  absl::Mutex mu_;
  grpc::ClientContext* active_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_GRPC_PARTY_SESSION_H_
