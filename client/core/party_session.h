#ifndef VFSYNTH_CLIENT_CORE_PARTY_SESSION_H_
#define VFSYNTH_CLIENT_CORE_PARTY_SESSION_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/core/curator_link.h"
#include "client/core/party_protocol.h"

namespace vfsynth {

// A party's whole session with the curator, over any CuratorLink: registers, aligns,
// attests the plan, releases label pairs, then serves the Train stream until the curator
// says Finished. If the curator goes away (its stream breaks without Finished), the
// session reconnects for up to reconnect_timeout_seconds and rejoins: Register, Align and
// Hello again (the core checks the run and records are the same) and the curator resends
// its round.
class PartySession {
 public:
  PartySession(v1::PartyConfig config, PartyProtocol* core, std::unique_ptr<CuratorLink> link)
      : config_(std::move(config)), core_(core), link_(std::move(link)) {}

  // Runs the whole session; returns when training finished or failed.
  absl::Status Run();
  // Thread-safe: aborts a running session (e.g. on SIGTERM).
  void Cancel();

 private:
  // One connection: register, align, serve. Sets *streamed once a Train stream ran.
  absl::Status Session(bool* streamed);
  absl::Status Serve(bool* streamed);
  // Record alignment: one Align call per hop, from this party's own list (hop 0) until
  // the curator answers with its aligned positions.
  absl::Status Align();
  // Tells the curator this party will not take part, so the run fails at once for every
  // party instead of at the join timeout. Best effort: `reason` is what the party reports.
  void Refuse(const absl::Status& reason);
  // `status` of this party's own step (not the link's), refused to the curator if it failed.
  absl::Status RefuseOnError(absl::Status status);
  template <typename T>
  absl::StatusOr<T> RefuseOnError(absl::StatusOr<T> result) {
    if (!result.ok()) return RefuseOnError(result.status());
    return result;
  }
  // Label pairs (training.label_column): the labels out or in, then this party's tables.
  absl::Status ReleaseLabelPairs();
  // Sleeps before reconnecting; false if the session was cancelled meanwhile.
  bool Backoff(absl::Duration delay);
  bool Cancelled();
  absl::Duration connect_timeout() const {
    return absl::Seconds(config_.connect_timeout_seconds());
  }

  v1::PartyConfig config_;
  PartyProtocol* core_;
  std::unique_ptr<CuratorLink> link_;
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_PARTY_SESSION_H_
