#ifndef VFSYNTH_CLIENT_CORE_RECORD_ALIGNMENT_H_
#define VFSYNTH_CLIENT_CORE_RECORD_ALIGNMENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/core/alignment_chain.h"
#include "client/core/answered_hops.h"
#include "common/data/psi.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// The aligned records of a vertical run: which of the party's rows, in the canonical
// order (by alignment token, the same at every party), and the digest of their tokens
// (a re-alignment after a reconnect must give the same).
struct AlignedRows {
  std::vector<int64_t> order;
  std::string digest;
};

// A vertical party's side of record alignment (docs/protocol.md, "Alignment"): its own
// blinded list (hop 0), the lists it blinds for the others, and the curator's positions
// turned into its rows. Every list it sends carries the chain's MAC, and it blinds only
// a list its predecessor MACed for it, one per hop (alignment_chain.h, answered_hops.h).
// Registration settings the vertical protocols share come with it.
class RecordAlignment {
 public:
  // `tokens`: the alignment tokens of `ids` (AlignmentTokens under `alignment_key`, the
  // parties' key); `answered_hops`: the file that keeps which lists this party blinded.
  RecordAlignment(std::string party, std::vector<std::string> ids, std::vector<std::string> tokens,
                  std::string alignment_key, std::string answered_hops);

  // Hop 0: the party's list, blinded by the exponent `party_secret` derives (the same
  // list again after a restart). `roster`: the run's parties in the curator's order.
  absl::StatusOr<v1::AlignRequest> FirstRequest(const std::string& run_id,
                                                const std::vector<std::string>& roster,
                                                const std::string& party_secret);
  // The curator's answer: the next call (the list of hop h, blinded), or nullopt once it
  // carries the aligned positions (then aligned() holds them). Refuses, blinding
  // nothing, a list the chain does not authenticate or a second list for a hop.
  absl::StatusOr<std::optional<v1::AlignRequest>> Answer(const v1::AlignResponse& response);
  // The curator's positions (Answer's last step): checked (ascending, distinct, this
  // party's rows, as many as the records), and the same records as before, if any.
  absl::Status AcceptPositions(const v1::AlignedPositions& positions);
  // The same checks without keeping the rows (a caller that may still refuse them).
  absl::StatusOr<AlignedRows> RowsOf(const v1::AlignedPositions& positions) const;
  // Once Answer saw the positions: the rows (the same on every later answer).
  const std::optional<AlignedRows>& aligned() const { return aligned_; }

 private:
  absl::StatusOr<AlignedRows> Accept(const v1::AlignedPositions& aligned) const;
  absl::StatusOr<v1::AlignRequest> Blind(const v1::BlindingTask& task);

  const std::string party_;
  const std::vector<std::string> ids_;
  const std::vector<std::string> tokens_;
  const std::string alignment_key_;
  const std::string answered_hops_path_;
  std::string run_id_;
  std::optional<PsiParty> psi_;
  std::optional<AlignmentChain> chain_;
  std::optional<AnsweredHops> answered_;
  std::optional<AlignedRows> aligned_;
};

// The file under the party's checkpoint directory that keeps its answered alignment hops.
std::string AnsweredHopsPath(const v1::PartyConfig& config);

// A vertical party's Register request: its public schema (no id column), rows and privacy
// declaration.
v1::RegisterRequest VerticalRegisterRequest(const v1::PartyConfig& config, const v1::Schema& schema,
                                            int64_t rows);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_RECORD_ALIGNMENT_H_
