#ifndef VFSYNTH_COMMON_PRIVACY_PARTY_NOISE_H_
#define VFSYNTH_COMMON_PRIVACY_PARTY_NOISE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/random/secure_random.h"

namespace vfsynth {

// A party's DP randomness: one cryptographic stream per purpose, each under its own
// key, so what one release lets an observer learn about its noise (the synthetic rows'
// features, which the curator can recompute, say) says nothing about another's.
// Nothing of it is ever saved: a restarted party draws new keys.
struct PartyNoise {
  SecureRandom critic_gradients;    // DP-SGD noise of the local critic's steps
  SecureRandom real_features;       // noise on released features of real rows
  SecureRandom synthetic_features;  // the same release's noise on synthetic rows
  SecureRandom slice_gradients;  // gswgan / pate: noise of the sanitised slice gradients and votes
  SecureRandom shard_choice;     // gswgan: the secret shard critic drawn per synthetic row

  // Every stream under a fresh key from the OS.
  static absl::StatusOr<std::shared_ptr<PartyNoise>> FromOsEntropy();
  // Every stream derived from `key` (tests, where a run must repeat).
  static std::shared_ptr<PartyNoise> Derived(absl::string_view key);
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PRIVACY_PARTY_NOISE_H_
