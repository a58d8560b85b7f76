#ifndef VFSYNTH_COMMON_DATA_PSI_H_
#define VFSYNTH_COMMON_DATA_PSI_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth {

// Private set intersection by commutative blinding over ristretto255 (libsodium):
// H(id) = ristretto255_from_hash(SHA-512("vfsynth-psi-v1" || id)); a party with secret
// scalar a sends H(id)^a for its ids, and raises every list handed to it to a. After
// every party has blinded every list, equal ids are equal elements H(id)^(a_1···a_K) and
// nothing else is comparable (DDH). The relay and the intersection run at the curator
// (server/core/psi_exchange.h); docs/privacy.md says what each side learns.

inline constexpr size_t kPsiElementBytes = 32;

// One party's side: its secret exponent, the secret shuffle of its list and the list
// itself (hop 0). Both secrets derive from the party's per-run secret, so a party that
// resumes with the same secret sends the same list.
class PsiParty {
 public:
  // Derives the exponent and the shuffle from `secret` and blinds every id. Errors on
  // an empty or duplicated id list.
  static absl::StatusOr<PsiParty> Create(absl::string_view secret,
                                         const std::vector<std::string>& ids);

  PsiParty(PsiParty&& other) noexcept;
  PsiParty& operator=(PsiParty&& other) noexcept;
  PsiParty(const PsiParty&) = delete;
  PsiParty& operator=(const PsiParty&) = delete;
  ~PsiParty();

  // H(ids[rows[p]])^a at position p.
  const std::vector<std::string>& own_list() const { return own_list_; }
  // Every element raised to a, in the same order. INVALID_ARGUMENT naming the first
  // element that is not a 32-byte encoding of a valid point.
  absl::StatusOr<std::vector<std::string>> Blind(const std::vector<std::string>& elements) const;
  // The rows (indices into the ids) at `positions` of own_list(), which must be
  // ascending, unique and in range.
  absl::StatusOr<std::vector<int64_t>> Rows(const std::vector<int64_t>& positions) const;

 private:
  using Scalar = std::array<unsigned char, 32>;
  PsiParty(const Scalar& exponent, std::vector<int64_t> rows);

  Scalar exponent_{};
  std::vector<int64_t> rows_;  // rows_[p]: the row whose element is at position p
  std::vector<std::string> own_list_;
};

// The curator's checks on a list it receives: 32-byte elements, none the identity's
// encoding, none twice. INVALID_ARGUMENT names the first offender. Whether an element
// is a point at all is left to the party that blinds it (PsiParty::Blind): decoding
// every element again would cost the curator a fifth of the parties' work, and a
// non-point in a fully blinded list matches nothing.
absl::Status CheckPsiList(const std::vector<std::string>& elements);

// For each fully blinded list, the positions (ascending) of the elements present in
// every list.
std::vector<std::vector<int64_t>> PsiIntersectionPositions(
    const std::vector<std::vector<std::string>>& lists);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_PSI_H_
