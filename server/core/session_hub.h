#ifndef VFSYNTH_SERVER_CORE_SESSION_HUB_H_
#define VFSYNTH_SERVER_CORE_SESSION_HUB_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// Connects the round orchestrator to the parties' Train streams without either side
// knowing about gRPC: per party an outbound queue (drained by the stream's writer)
// and an inbound queue (filled by the stream's reader). Thread-safe.
//
// Rejoining: the hub remembers every message sent to a party since BeginRound().
// When a party that had a stream connects again (after its stream dropped), its
// outbound queue is replaced by that round's messages, so the party sees the round
// again from its start; it answers what it already answered from its reply journal
// (identical bytes) and the orchestrator drops those duplicates.
class SessionHub {
 public:
  explicit SessionHub(std::vector<std::string> parties);

  int Index(const std::string& party) const;  // -1 if not in the roster

  // ---- stream side ----
  // A new stream of `party`; ALREADY_EXISTS if the party already has a live stream;
  // CANCELLED after Cancel.
  absl::Status Connect(int party);
  // The current stream's number (increases with every Connect of the party).
  uint64_t connection(int party) const;
  // Ends stream `connection` (or the current one); a newer stream stays connected.
  void Disconnect(int party);
  void Disconnect(int party, uint64_t connection);
  void Deliver(int party, v1::PartyMessage message, size_t wire_bytes);
  // Blocks for the next outbound message of stream `connection` (or the current one);
  // nullopt once the party's queue is closed and drained or the stream was replaced.
  std::optional<v1::CuratorMessage> NextOutgoing(int party);
  std::optional<v1::CuratorMessage> NextOutgoing(int party, uint64_t connection);
  void CountSent(int party, size_t wire_bytes);

  // ---- orchestrator side ----
  void Send(int party, v1::CuratorMessage message);
  // Starts a new round: forgets the messages a rejoining party would be resent.
  void BeginRound();
  // After Receive returned UNAVAILABLE: waits until the party has a stream again.
  // UNAVAILABLE naming the party if it does not come back by `deadline`.
  absl::Status AwaitReconnect(int party, absl::Time deadline);
  // Ends every outbound queue after what is queued has been sent.
  void CloseAll();
  // Waits until every party has a live stream.
  absl::Status WaitAllConnected(absl::Time deadline);
  // Next inbound message of one party. DEADLINE_EXCEEDED (naming the party) at the
  // deadline, UNAVAILABLE if its stream ended, CANCELLED after Cancel.
  absl::StatusOr<v1::PartyMessage> Receive(int party, absl::Time deadline);
  // Makes every current and future wait return `reason`.
  void Cancel(absl::Status reason);
  bool cancelled() const;

  // Called with every delivered inbound message (tests inspect what crosses the wire).
  void SetInboundObserver(std::function<void(int, const v1::PartyMessage&)> observer);

  bool connected(int party) const;
  int64_t bytes_sent(int party) const;
  int64_t bytes_received(int party) const;
  // When the party's last inbound message arrived (InfinitePast if none yet).
  absl::Time last_message(int party) const;

 private:
  struct Session {
    std::string name;
    bool connected = false;
    uint64_t connection = 0;  // 0: never connected
    std::vector<v1::CuratorMessage> round_log;  // sent since BeginRound()
    bool closed = false;
    std::deque<v1::CuratorMessage> outbox;
    std::deque<v1::PartyMessage> inbox;
    int64_t bytes_sent = 0;
    int64_t bytes_received = 0;
    absl::Time last_message = absl::InfinitePast();
  };

  mutable absl::Mutex mu_;
  std::vector<Session> sessions_ ABSL_GUARDED_BY(mu_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mu_);
  std::function<void(int, const v1::PartyMessage&)> observer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_SESSION_HUB_H_
