#ifndef VFSYNTH_COMMON_GAN_STREAM_PURPOSES_H_
#define VFSYNTH_COMMON_GAN_STREAM_PURPOSES_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace vfsynth {

// Names of the counter-based random streams. Curator streams (StreamGenerator) are
// keyed by CuratorStreamKey(seed), which is public; party streams (SecureRandom::Derived)
// by the parties' sampling secret. Counters: critic streams use the global critic-step index
// (round * n_critic + c), generator streams the generator round.
namespace streams {
inline constexpr char kCriticZ[] = "critic-z";
inline constexpr char kCriticGumbel[] = "critic-gumbel";
inline constexpr char kSharedGpAlpha[] = "shared-gp-alpha";
inline constexpr char kGeneratorZ[] = "generator-z";
inline constexpr char kGeneratorGumbel[] = "generator-gumbel";
inline constexpr char kSynthesis[] = "synthesis";
inline constexpr char kInit[] = "init";
inline constexpr char kRealBatch[] = "real-batch";           // party-shared secret
inline std::string LocalGpAlpha(const std::string& party) {  // party-shared secret
  return absl::StrCat("local-gp-alpha/", party);
}
}  // namespace streams

inline std::string CuratorStreamKey(uint64_t seed) { return absl::StrCat("vfsynth-seed:", seed); }

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_STREAM_PURPOSES_H_
