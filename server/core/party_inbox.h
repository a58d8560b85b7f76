#ifndef VFSYNTH_SERVER_CORE_PARTY_INBOX_H_
#define VFSYNTH_SERVER_CORE_PARTY_INBOX_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/curator_run.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// Where a reply sits in a protocol's sequence of exchanges with one party: its round,
// then its place within the round. Replies are consumed in increasing position.
struct ReplyPosition {
  int64_t round = 0;
  int64_t place = 0;
  bool operator<=(const ReplyPosition& other) const {
    return round < other.round || (round == other.round && place <= other.place);
  }
};

// A curator message of `run` for (round, step), with the durable round: what every message
// on a Train stream carries.
v1::CuratorMessage RunEnvelope(const CuratorRun& run, int64_t round, int64_t step);

// The protocol's side of the parties' Train streams: each expected reply is received,
// recognised as a repeat (a rejoined party answers resent tasks from its journal),
// or checked and either taken or answered with a ProtocolError while the round waits on.
class PartyInbox {
 public:
  // A reply's position in the protocol's sequence, or nullopt if it names none.
  using PositionOf = std::function<std::optional<ReplyPosition>(const v1::PartyMessage&)>;
  // Checks the payload of a message whose kind and position are the expected ones.
  using CheckPayload = std::function<absl::Status(const v1::PartyMessage&)>;

  PartyInbox(const CuratorRun& run, PositionOf position_of);

  // The next message of `party` with payload `expected` for (round, step), waiting up to
  // round_timeout_seconds plus `work` (what the task itself takes beyond a round's
  // exchange), and, if the party disconnects, reconnect_timeout_seconds for it to rejoin.
  // A party's error message ends the wait with ABORTED naming it.
  absl::StatusOr<v1::PartyMessage> Expect(int party, v1::PartyMessage::PayloadCase expected,
                                          int64_t round, int64_t step, const CheckPayload& check,
                                          absl::Duration work = absl::ZeroDuration());
  v1::CuratorMessage Envelope(int64_t round, int64_t step) const {
    return RunEnvelope(run_, round, step);
  }

 private:
  const CuratorRun& run_;
  const PositionOf position_of_;
  // Per party: the position of the last reply taken (read and written by the protocol's
  // thread only).
  std::vector<std::optional<ReplyPosition>> consumed_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_PARTY_INBOX_H_
