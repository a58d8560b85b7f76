#ifndef VFSYNTH_CLIENT_CORE_ALIGNMENT_CHAIN_H_
#define VFSYNTH_CLIENT_CORE_ALIGNMENT_CHAIN_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/secure/authenticated_list.h"

namespace vfsynth {

// The authenticated chain of record alignment (docs/privacy.md, "Record alignment"). The
// curator relays every list, so a party would otherwise blind whatever it is handed,
// including H(id) of guessed ids. Each party MACs the list it sends at each hop under a
// key derived from the alignment key (which the curator never sees), binding the run, the
// roster, the hop, the list's origin, its sender and its receiver, and the elements (so
// their number); a party blinds a list only if its predecessor MACed it for this party,
// this hop and the origin the roster places there. The curator can drop or delay a list,
// but cannot forge, alter, pad, reroute or replay one from another run or hop.
class AlignmentChain {
 public:
  // `roster`: the run's parties in the curator's order (each party MACs its own view, so
  // two parties shown different rosters refuse each other's lists); `self` must be in it.
  static absl::StatusOr<AlignmentChain> Create(absl::string_view alignment_key, std::string run_id,
                                               std::vector<std::string> roster,
                                               const std::string& self);

  int hops() const { return static_cast<int>(roster_.size()); }
  // The MAC of the list this party sends at `hop` (0: its own list).
  absl::StatusOr<std::string> Mac(int hop, const std::vector<std::string>& elements) const;
  // OK if `mac` is the predecessor's MAC of `elements`, the list this party blinds at `hop`
  // (1 to hops() - 1); PERMISSION_DENIED otherwise, INVALID_ARGUMENT for an out-of-range
  // hop or an element that is not a 32-byte encoding. Names no element.
  absl::Status Verify(int hop, const std::vector<std::string>& elements,
                      absl::string_view mac) const;

 private:
  AlignmentChain(std::string key, std::string run_id, std::vector<std::string> roster, int self,
                 std::string roster_digest);
  // What the MAC of the list `sender` (a roster index) sends at `hop` binds.
  secure::ListHeader HeaderOf(int sender, int hop) const;
  const std::string& At(int index) const;

  std::string key_;
  std::string run_id_;
  std::vector<std::string> roster_;
  int self_;
  std::string roster_digest_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_ALIGNMENT_CHAIN_H_
