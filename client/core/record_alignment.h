#ifndef VFSYNTH_CLIENT_CORE_RECORD_ALIGNMENT_H_
#define VFSYNTH_CLIENT_CORE_RECORD_ALIGNMENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
// turned into its rows. Registration settings the vertical protocols share come with it.
class RecordAlignment {
 public:
  // `tokens`: the alignment tokens of `ids` (AlignmentTokens under the parties' key).
  RecordAlignment(std::string party, std::vector<std::string> ids, std::vector<std::string> tokens);

  // Hop 0: the party's list, blinded by the exponent `party_secret` derives (the same
  // list again after a restart).
  absl::StatusOr<v1::AlignRequest> FirstRequest(const std::string& run_id,
                                                const std::string& party_secret);
  // The curator's answer: the next call (a list blinded for hop h of `parties`), or
  // nullopt once it carries the aligned positions (then aligned() holds them).
  absl::StatusOr<std::optional<v1::AlignRequest>> Answer(const std::string& run_id,
                                                         const v1::AlignResponse& response,
                                                         int parties);
  // The curator's positions (Answer's last step): checked (ascending, distinct, this
  // party's rows, as many as the records), and the same records as before, if any.
  absl::Status AcceptPositions(const v1::AlignedPositions& positions);
  // The same checks without keeping the rows (a caller that may still refuse them).
  absl::StatusOr<AlignedRows> RowsOf(const v1::AlignedPositions& positions) const;
  // Once Answer saw the positions: the rows (the same on every later answer).
  const std::optional<AlignedRows>& aligned() const { return aligned_; }

 private:
  absl::StatusOr<AlignedRows> Accept(const v1::AlignedPositions& aligned) const;

  const std::string party_;
  const std::vector<std::string> ids_;
  const std::vector<std::string> tokens_;
  std::optional<PsiParty> psi_;
  std::optional<AlignedRows> aligned_;
};

// A vertical party's Register request: its public schema (no id column), rows and privacy
// declaration.
v1::RegisterRequest VerticalRegisterRequest(const v1::PartyConfig& config, const v1::Schema& schema,
                                            int64_t rows);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_RECORD_ALIGNMENT_H_
