#include "common/base/fnv.h"

namespace vfsynth {
namespace {

constexpr uint64_t kOffset = 14695981039346656037ULL;
constexpr uint64_t kPrime = 1099511628211ULL;

uint64_t Mix(uint64_t hash, uint64_t value) { return (hash ^ value) * kPrime; }

uint64_t MixBytes(uint64_t hash, absl::string_view data) {
  for (unsigned char c : data) hash = Mix(hash, c);
  return hash;
}

}  // namespace

uint64_t Fnv1a64(absl::string_view data) { return MixBytes(kOffset, data); }

uint64_t Fnv1a64Words(absl::string_view data) {
  uint64_t hash = kOffset;
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t word = 0;
    for (int b = 0; b < 8; ++b)
      word |= static_cast<uint64_t>(static_cast<unsigned char>(data[i + b])) << (8 * b);
    hash = Mix(hash, word);
  }
  return MixBytes(hash, data.substr(i));
}

}  // namespace vfsynth
