#include "common/privacy/party_noise.h"

#include <utility>

#include "common/base/status_macros.h"

namespace vfsynth {

absl::StatusOr<std::shared_ptr<PartyNoise>> PartyNoise::FromOsEntropy() {
  ASSIGN_OR_RETURN(SecureRandom critic_gradients, SecureRandom::FromOsEntropy());
  ASSIGN_OR_RETURN(SecureRandom real_features, SecureRandom::FromOsEntropy());
  ASSIGN_OR_RETURN(SecureRandom synthetic_features, SecureRandom::FromOsEntropy());
  ASSIGN_OR_RETURN(SecureRandom slice_gradients, SecureRandom::FromOsEntropy());
  ASSIGN_OR_RETURN(SecureRandom shard_choice, SecureRandom::FromOsEntropy());
  return std::make_shared<PartyNoise>(PartyNoise{
      std::move(critic_gradients), std::move(real_features), std::move(synthetic_features),
      std::move(slice_gradients), std::move(shard_choice)});
}

std::shared_ptr<PartyNoise> PartyNoise::Derived(absl::string_view key) {
  return std::make_shared<PartyNoise>(
      PartyNoise{SecureRandom::Derived(key, "critic-gradients", 0),
                 SecureRandom::Derived(key, "real-features", 0),
                 SecureRandom::Derived(key, "synthetic-features", 0),
                 SecureRandom::Derived(key, "slice-gradients", 0),
                 SecureRandom::Derived(key, "shard-choice", 0)});
}

}  // namespace vfsynth
