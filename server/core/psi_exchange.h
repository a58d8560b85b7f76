#ifndef VFSYNTH_SERVER_CORE_PSI_EXCHANGE_H_
#define VFSYNTH_SERVER_CORE_PSI_EXCHANGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/join_deadline.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// The curator's side of record alignment (common/data/psi.h): K parties in roster
// order; at hop 0 each sends its own blinded list; at hop h = 1..K-1 party i blinds the
// list that started at party i - h (mod K). After hop K-1 every list is blinded by every
// party; the exchange intersects them and tells each party the positions of its own list
// that every party holds. It sees list lengths and which fully blinded elements each
// party holds, never an id or a token. Thread-safe; no gRPC types.
//
// Every call is idempotent: a party that calls again (it reconnected or restarted) must
// send, for a hop it sent before, the same list, and gets its next task again. Each list's
// chain MAC (client/core/alignment_chain.h) is relayed with it, for the parties to check.
class PsiExchange {
 public:
  explicit PsiExchange(std::vector<std::string> roster);

  // Takes `party`'s list of request.hop() (checked: the hop is in range and its turn,
  // the elements are valid, as many as were handed out, and the same as before if this
  // hop was sent before). A list not sent before is a step of the join (`join`). Waits
  // until every party has sent its list of the party's latest hop (DEADLINE_EXCEEDED
  // naming the others once `join` passed), then returns the party's next task: the list
  // to blind at the next hop, or its aligned positions.
  absl::StatusOr<v1::AlignResponse> Submit(int party, const v1::AlignRequest& request,
                                           JoinDeadline& join);

  // True once `party` has sent its list of every hop.
  bool Done(int party) const;
  // The parties that have not sent their list of the hop in progress (empty once done).
  std::vector<std::string> Waiting() const;
  // Makes every current and future wait return `reason`.
  void Cancel(absl::Status reason);

 private:
  // A list and the MAC its sender's chain gave it (the curator relays it unread).
  struct List {
    std::vector<std::string> elements;
    std::string chain_mac;
  };

  int hops() const { return static_cast<int>(roster_.size()); }
  // The index of the party whose list `party` blinds at `hop`.
  int Start(int party, int hop) const { return ((party - hop) % hops() + hops()) % hops(); }
  // Checks and stores a list not sent before.
  absl::Status Take(int party, int hop, List list, std::string digest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<std::string> WaitingLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const std::vector<std::string> roster_;
  mutable absl::Mutex mu_;
  // Per party: the digest of its list of each hop it sent.
  std::vector<std::vector<std::string>> sent_ ABSL_GUARDED_BY(mu_);
  int completed_hops_ ABSL_GUARDED_BY(mu_) = 0;  // hops every party has sent
  // By the party each list started at: as of the last completed hop, and this hop's.
  std::vector<List> lists_ ABSL_GUARDED_BY(mu_);
  std::vector<List> incoming_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<int64_t>> positions_ ABSL_GUARDED_BY(mu_);  // once every hop is done
  absl::Status cancelled_ ABSL_GUARDED_BY(mu_);
};

// The check every PSI-aligned protocol makes of an Align call: a hop-0 list as long as the
// registered rows of `party` (its roster name).
absl::Status CheckAlignRows(const std::string& party, const v1::AlignRequest& request,
                            const v1::RegisterRequest& registration);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_PSI_EXCHANGE_H_
