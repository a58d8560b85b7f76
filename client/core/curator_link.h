#ifndef VFSYNTH_CLIENT_CORE_CURATOR_LINK_H_
#define VFSYNTH_CLIENT_CORE_CURATOR_LINK_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// What every call of a cancelled link, and a cancelled session, returns.
inline absl::Status PartyShuttingDown() { return absl::CancelledError("party is shutting down"); }

// One Train stream to the curator as the party sees it: the pieces of the wire protocol
// (common/protocol/chunking.h), in order, each way.
class TrainStream {
 public:
  virtual ~TrainStream() = default;
  // False once the stream is closed.
  virtual bool Write(const v1::PartyMessage& piece) = 0;
  // False when the curator has nothing more to send.
  virtual bool Read(v1::CuratorMessage* piece) = 0;
  // Ends this party's side and returns how the curator ended the stream ("Train stream: ...").
  virtual absl::Status Finish() = 0;
};

// What a party asks of the curator, whatever carries it: gRPC over mTLS for the party
// daemon, in process for the audit's shadow runs. A failed call names itself ("Register:
// ..."); UNAVAILABLE means the curator could not be reached, CANCELLED that Cancel() ran.
class CuratorLink {
 public:
  virtual ~CuratorLink() = default;

  // Makes the curator reachable (a new connection per call), waiting at most `timeout`.
  virtual absl::Status Connect(absl::Duration timeout) = 0;

  virtual absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& request,
                                                        absl::Duration timeout) = 0;
  virtual absl::StatusOr<v1::AlignResponse> Align(const v1::AlignRequest& request,
                                                  absl::Duration timeout) = 0;
  virtual absl::StatusOr<v1::AttestPlanResponse> AttestPlan(const v1::AttestPlanRequest& request,
                                                            absl::Duration timeout) = 0;
  virtual absl::StatusOr<v1::ShareLabelsResponse> ShareLabels(const v1::ShareLabelsRequest& request,
                                                              absl::Duration timeout) = 0;
  virtual absl::StatusOr<v1::LabelPairsResponse> ReleaseLabelPairs(
      const v1::LabelPairsRequest& request, absl::Duration timeout) = 0;
  virtual absl::StatusOr<v1::MarginalsResponse> ReleaseMarginals(
      const v1::MarginalsRequest& request, absl::Duration timeout) = 0;
  // The round protocol's stream; CANCELLED if the link is cancelled.
  virtual absl::StatusOr<std::unique_ptr<TrainStream>> OpenTrain() = 0;

  // Thread-safe: ends the call or stream in progress; every later call fails CANCELLED.
  virtual void Cancel() = 0;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_CURATOR_LINK_H_
