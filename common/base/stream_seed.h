#ifndef VFSYNTH_COMMON_BASE_STREAM_SEED_H_
#define VFSYNTH_COMMON_BASE_STREAM_SEED_H_

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace vfsynth {

// Counter-based randomness: every draw (z, batch indices, interpolation weights,
// Gumbel noise) is seeded by HMAC-SHA256(key, purpose || counter), so any process
// holding `key` reproduces the same values for (purpose, counter) regardless of what
// it drew before. This is what makes the reference trainer, a distributed run and a
// resumed run draw identical values. With a secret key (the parties' sampling
// secret) the seeds are unpredictable to anyone without it.
// The whole HMAC-SHA256(key, purpose ‖ 0 ‖ counter as 8 little-endian bytes): the
// 256-bit key of a cryptographic stream (SecureRandom::Derived).
std::array<unsigned char, 32> DeriveStreamKey(absl::string_view key, absl::string_view purpose,
                                              uint64_t counter);
// Its first 8 bytes, little-endian: the seed of a LibTorch generator, for public keys only.
uint64_t DeriveStreamSeed(absl::string_view key, absl::string_view purpose, uint64_t counter);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_STREAM_SEED_H_
