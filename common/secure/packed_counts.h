#ifndef VFSYNTH_COMMON_SECURE_PACKED_COUNTS_H_
#define VFSYNTH_COMMON_SECURE_PACKED_COUNTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/secure/paillier.h"

namespace vfsynth::secure {

// Slot arithmetic. A slot holds count + noise + offset < 2^34 and never carries into its
// neighbour: counts <= 2^24 records, |noise| < 2^30, offset 2^31 keeps a slot positive.
inline constexpr int kSlotBits = 34;
inline constexpr int64_t kMaxRecords = int64_t{1} << 24;
inline constexpr int64_t kNoiseBound = int64_t{1} << 30;
inline constexpr int64_t kSlotOffset = int64_t{1} << 31;

// Where each of a party's categorical columns sits in its packed one-hot: column c's value v
// is slot offset(c) + v; slots fill plaintexts of slots_per_ciphertext() slots each.
class SlotLayout {
 public:
  // `categories`: each column's number of categories (>= 1). With a 2048-bit modulus a
  // plaintext holds floor(2047 / 34) = 60 slots (it must stay below n >= 2^(bits-1)).
  static absl::StatusOr<SlotLayout> Create(std::vector<int> categories, int modulus_bits);

  int num_columns() const { return static_cast<int>(categories_.size()); }
  int categories(int column) const { return categories_[column]; }
  int offset(int column) const { return offsets_[column]; }
  int num_slots() const { return num_slots_; }
  int slots_per_ciphertext() const { return slots_per_ciphertext_; }
  // ceil(num_slots / slots_per_ciphertext): ciphertexts per record and per sum.
  int num_ciphertexts() const { return num_ciphertexts_; }
  // Slots in plaintext j (the last may hold fewer).
  int slots_in(int ciphertext) const;

 private:
  std::vector<int> categories_;
  std::vector<int> offsets_;
  int num_slots_ = 0;
  int slots_per_ciphertext_ = 0;
  int num_ciphertexts_ = 0;
};

// A record's one-hot as num_ciphertexts() plaintexts; values[c] in [0, categories(c)).
absl::StatusOr<std::vector<BnPtr>> PackRecord(const SlotLayout& layout,
                                              absl::Span<const int32_t> values);

// Arbitrary slot values in [0, 2^kSlotBits), one per slot, as num_ciphertexts() plaintexts.
absl::StatusOr<std::vector<BnPtr>> PackSlots(const SlotLayout& layout,
                                             absl::Span<const int64_t> slot_values);

// The slot values of num_ciphertexts() plaintexts minus `offset`. Refuses a plaintext with
// bits beyond its slots, or a value outside [min_value, max_value]: a sum that was forged,
// mis-sent or decrypted under another key.
absl::StatusOr<std::vector<int64_t>> UnpackSlots(const SlotLayout& layout,
                                                 const std::vector<BnPtr>& plaintexts,
                                                 int64_t offset, int64_t min_value,
                                                 int64_t max_value);

}  // namespace vfsynth::secure

#endif  // VFSYNTH_COMMON_SECURE_PACKED_COUNTS_H_
