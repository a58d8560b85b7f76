#ifndef VFSYNTH_COMMON_SECURE_CROSS_COUNTS_H_
#define VFSYNTH_COMMON_SECURE_CROSS_COUNTS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/random/secure_random.h"
#include "common/secure/packed_counts.h"
#include "common/secure/paillier.h"

namespace vfsynth::secure {

// The noisy counts of (value y of B's column, slot of A's layout) over the aligned records.
struct CrossCounts {
  int b_categories = 0;
  int num_slots = 0;
  std::vector<int64_t> counts;  // y-major: counts[y * num_slots + slot]
  int64_t at(int y, int slot) const { return counts[static_cast<size_t>(y) * num_slots + slot]; }
};

// Party A (holds the key): each aligned record's packed one-hot over A's columns,
// encrypted with the CRT fast path. `columns[c][i]` is column c's value at record i.
// Returns layout.num_ciphertexts() ciphertexts per record, record-major. The records are
// split into `threads` contiguous ranges, one thread (and BN_CTX) each. Once `stop` (if
// given) is set, every thread ends at its next record and the call returns CANCELLED:
// encrypting Adult takes a minute, and a party shutting down must not wait for it.
absl::StatusOr<std::vector<Ciphertext>> EncryptRecords(
    const PaillierPrivateKey& key, const SlotLayout& layout,
    const std::vector<std::vector<int32_t>>& columns, int threads,
    const std::atomic<bool>* stop = nullptr);

// Party B: per value y of its column, the product of A's ciphertexts of the records with
// b_values[i] = y (per slot: the count of records with that slot and b = y), times
// Enc(kSlotOffset + discrete Gaussian(sigma_b)) per slot, a fresh encryption that also
// re-randomises the sum, so A cannot recognise which of its ciphertexts went in.
// Returns b_categories * layout.num_ciphertexts() ciphertexts, y-major.
absl::StatusOr<std::vector<Ciphertext>> SumByValue(
    const PaillierPublicKey& key, const SlotLayout& layout, const std::vector<Ciphertext>& records,
    absl::Span<const int32_t> b_values, int b_categories, double sigma_b, SecureRandom& rng);

// A slot whose count B does not release to A (A's column is not paired with B's): B adds
// a uniform mask on (-kNoiseBound, kNoiseBound) instead of noise, so what A decrypts there
// is within records / 2^30 in statistical distance of independent of the count, and A
// drops the slot.
inline constexpr double kMaskedSlot = -1;

// SumByValue with each slot's own noise: `slot_sigmas[s]` for slot s (one per slot of the
// layout), kMaskedSlot for a slot whose count is not released. A holder whose columns are
// in histograms of different σ with B's column adds each histogram's.
absl::StatusOr<std::vector<Ciphertext>> SumByValue(
    const PaillierPublicKey& key, const SlotLayout& layout, const std::vector<Ciphertext>& records,
    absl::Span<const int32_t> b_values, int b_categories, absl::Span<const double> slot_sigmas,
    SecureRandom& rng);

// Party A: decrypts B's sums, removes the offset, refuses any slot outside what
// num_records counts and B's bounded noise can give, and adds its own discrete Gaussian
// noise (sigma_a) to every count before it leaves.
absl::StatusOr<CrossCounts> DecryptCounts(const PaillierPrivateKey& key, const SlotLayout& layout,
                                          const std::vector<Ciphertext>& sums, int b_categories,
                                          int64_t num_records, double sigma_a, SecureRandom& rng);

// How far the noise may take a count, in its σ: a discrete Gaussian of σ is
// sub-Gaussian, P(|X| > cσ) <= 2 exp(-c²/2) = 2^-45 at c = 8, so an honest run is refused
// with probability below 2^-40 per slot (and per column sum, whose noise is a sum of them).
inline constexpr double kNoiseTailSigmas = 8;

// DecryptCounts with each slot's own noise (`slot_sigmas`, one per slot: the σ each
// holder adds, B's as A's); a kMaskedSlot slot (B masked it) is neither checked nor
// noised, and its count is 0. A's noise is added first; then every released count must
// lie in [-c s, num_records + c s] with s = σ√2 (both holders' noise) and each released
// column's counts (all of B's values, all of the column's) must sum to num_records within
// c·sqrt(Σ s²) (c = kNoiseTailSigmas): B cannot scale the sums without being refused, and
// a refusal, which names only the histogram (`column_labels`, one per column of the
// layout, or empty), depends on nothing but what A would release. B can still weight one
// record within these bounds (docs/privacy.md).
absl::StatusOr<CrossCounts> DecryptCounts(const PaillierPrivateKey& key, const SlotLayout& layout,
                                          const std::vector<Ciphertext>& sums, int b_categories,
                                          int64_t num_records, absl::Span<const double> slot_sigmas,
                                          SecureRandom& rng,
                                          absl::Span<const std::string> column_labels = {});

}  // namespace vfsynth::secure

#endif  // VFSYNTH_COMMON_SECURE_CROSS_COUNTS_H_
