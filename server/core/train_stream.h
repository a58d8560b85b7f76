#ifndef VFSYNTH_SERVER_CORE_TRAIN_STREAM_H_
#define VFSYNTH_SERVER_CORE_TRAIN_STREAM_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/curator_core.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// One party's Train stream as the curator sees it, whatever carries it: the pieces of the
// wire protocol (common/protocol/chunking.h), in order, each way. Read and Write may run
// on two threads at once (one of each).
class PartyStream {
 public:
  virtual ~PartyStream() = default;
  // False when the party has nothing more to send (or the stream broke).
  virtual bool Read(v1::PartyMessage* piece) = 0;
  // False once the stream is closed.
  virtual bool Write(const v1::CuratorMessage& piece) = 0;
  // Ends the stream now, from the curator's side.
  virtual void Cancel() = 0;
  virtual bool Cancelled() const = 0;
  // Where the stream comes from, for status and logs.
  virtual std::string peer() const = 0;
};

// Who a stream's Hello claims to be, checked by the transport (the certificate, or the
// roster in plaintext); the authenticated party name or PERMISSION_DENIED/UNAUTHENTICATED.
using AuthenticateParty = std::function<absl::StatusOr<std::string>(const std::string& claimed)>;

// Serves one Train stream until it ends: checks the Hello (identity, protocol version,
// run, attested plan), connects the party in the core's session hub, sends what the hub
// queues for it and delivers what it sends. Returns how the stream ended.
absl::Status ServeTrainStream(CuratorCore& core, PartyStream& stream,
                              const AuthenticateParty& authenticate);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_TRAIN_STREAM_H_
