#include "common/secure/packed_counts.h"

#include <openssl/bn.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace vfsynth::secure {
namespace {

constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;

// Little-endian bytes of a plaintext of `slots` slots, with 8 spare bytes so any slot can be
// read as one 64-bit word.
size_t BufferBytes(int slots) { return (static_cast<size_t>(slots) * kSlotBits + 7) / 8 + 8; }

}  // namespace

absl::StatusOr<SlotLayout> SlotLayout::Create(std::vector<int> categories, int modulus_bits) {
  if (categories.empty()) return absl::InvalidArgumentError("slot layout without columns");
  if (modulus_bits < kMinModulusBits) {
    return absl::InvalidArgumentError(absl::StrCat("slot layout for a ", modulus_bits,
                                                   "-bit modulus; at least ", kMinModulusBits,
                                                   " required"));
  }
  SlotLayout layout;
  int64_t total = 0;
  for (size_t c = 0; c < categories.size(); ++c) {
    if (categories[c] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("column ", c, " has ", categories[c], " categories; at least 1 required"));
    }
    layout.offsets_.push_back(static_cast<int>(total));
    total += categories[c];
    if (total > (int64_t{1} << 24)) {
      return absl::InvalidArgumentError("slot layout of more than 2^24 slots");
    }
  }
  layout.categories_ = std::move(categories);
  layout.num_slots_ = static_cast<int>(total);
  layout.slots_per_ciphertext_ = (modulus_bits - 1) / kSlotBits;
  layout.num_ciphertexts_ =
      (layout.num_slots_ + layout.slots_per_ciphertext_ - 1) / layout.slots_per_ciphertext_;
  return layout;
}

int SlotLayout::slots_in(int ciphertext) const {
  return std::min(slots_per_ciphertext_, num_slots_ - ciphertext * slots_per_ciphertext_);
}

absl::StatusOr<std::vector<BnPtr>> PackRecord(const SlotLayout& layout,
                                              absl::Span<const int32_t> values) {
  if (static_cast<int>(values.size()) != layout.num_columns()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "record of ", values.size(), " values for a layout of ", layout.num_columns(), " columns"));
  }
  std::vector<BnPtr> plaintexts;
  for (int j = 0; j < layout.num_ciphertexts(); ++j) {
    plaintexts.push_back(NewBn());
    BN_zero(plaintexts.back().get());
  }
  for (int c = 0; c < layout.num_columns(); ++c) {
    if (values[c] < 0 || values[c] >= layout.categories(c)) {
      return absl::InvalidArgumentError(absl::StrCat("column ", c, " value ", values[c],
                                                     " outside [0, ", layout.categories(c), ")"));
    }
    const int slot = layout.offset(c) + values[c];
    const int j = slot / layout.slots_per_ciphertext();
    const int local = slot % layout.slots_per_ciphertext();
    if (BN_set_bit(plaintexts[j].get(), local * kSlotBits) != 1) {
      return absl::InternalError("OpenSSL failed to set a slot");
    }
  }
  return plaintexts;
}

absl::StatusOr<std::vector<BnPtr>> PackSlots(const SlotLayout& layout,
                                             absl::Span<const int64_t> slot_values) {
  if (static_cast<int>(slot_values.size()) != layout.num_slots()) {
    return absl::InvalidArgumentError(
        absl::StrCat(slot_values.size(), " slot values for ", layout.num_slots(), " slots"));
  }
  std::vector<BnPtr> plaintexts;
  for (int j = 0; j < layout.num_ciphertexts(); ++j) {
    const int slots = layout.slots_in(j);
    std::vector<unsigned char> bytes(BufferBytes(slots), 0);
    for (int s = 0; s < slots; ++s) {
      const int64_t v = slot_values[j * layout.slots_per_ciphertext() + s];
      if (v < 0 || static_cast<uint64_t>(v) > kSlotMask) {
        return absl::InvalidArgumentError(
            absl::StrCat("slot value ", v, " outside [0, 2^", kSlotBits, ")"));
      }
      const size_t bit = static_cast<size_t>(s) * kSlotBits;
      uint64_t word;
      std::memcpy(&word, &bytes[bit / 8], 8);  // little-endian host (x86-64, arm64)
      word |= static_cast<uint64_t>(v) << (bit % 8);
      std::memcpy(&bytes[bit / 8], &word, 8);
    }
    BnPtr m(BN_lebin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr));
    if (m == nullptr) return absl::InternalError("OpenSSL failed to read a plaintext");
    plaintexts.push_back(std::move(m));
  }
  return plaintexts;
}

absl::StatusOr<std::vector<int64_t>> UnpackSlots(const SlotLayout& layout,
                                                 const std::vector<BnPtr>& plaintexts,
                                                 int64_t offset, int64_t min_value,
                                                 int64_t max_value) {
  if (static_cast<int>(plaintexts.size()) != layout.num_ciphertexts()) {
    return absl::InvalidArgumentError(
        absl::StrCat(plaintexts.size(), " plaintexts for a layout of ", layout.num_ciphertexts()));
  }
  std::vector<int64_t> values;
  values.reserve(layout.num_slots());
  for (int j = 0; j < layout.num_ciphertexts(); ++j) {
    const int slots = layout.slots_in(j);
    if (BN_is_negative(plaintexts[j].get()) ||
        BN_num_bits(plaintexts[j].get()) > slots * kSlotBits) {
      return absl::InvalidArgumentError(
          absl::StrCat("decrypted sum ", j, " has bits beyond its ", slots,
                       " slots: forged, mis-sent, or encrypted under another key"));
    }
    std::vector<unsigned char> bytes(BufferBytes(slots), 0);
    if (BN_bn2lebinpad(plaintexts[j].get(), bytes.data(), static_cast<int>(bytes.size())) < 0) {
      return absl::InternalError("OpenSSL failed to write a plaintext");
    }
    for (int s = 0; s < slots; ++s) {
      const size_t bit = static_cast<size_t>(s) * kSlotBits;
      uint64_t word;
      std::memcpy(&word, &bytes[bit / 8], 8);
      const int64_t v = static_cast<int64_t>((word >> (bit % 8)) & kSlotMask) - offset;
      if (v < min_value || v > max_value) {
        // No value in the message: it can be a decrypted count before any noise.
        return absl::InvalidArgumentError(
            absl::StrCat("a decrypted slot holds a value outside the possible [", min_value, ", ",
                         max_value, "]: forged, mis-sent, or encrypted under another key"));
      }
      values.push_back(v);
    }
  }
  return values;
}

}  // namespace vfsynth::secure
