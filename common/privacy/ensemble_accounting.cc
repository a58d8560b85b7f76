#include "common/privacy/ensemble_accounting.h"

#include <cmath>

#include "common/base/status_macros.h"
#include "common/privacy/accountant.h"

namespace vfsynth::privacy {

StepMechanism RowRelease(double z, const EnsembleShape& shape) {
  StepMechanism mechanism;
  mechanism.sampler = Sampler::kWithoutReplacement;
  switch (shape.aggregation) {
    case RowAggregation::kGswgan:
      mechanism.noise_multipliers = {z};
      mechanism.sample_rate = 1.0 / static_cast<double>(shape.shards);
      break;
    case RowAggregation::kPateThreshold:
      mechanism.noise_multipliers = {z};
      mechanism.sample_rate = 1.0;
      break;
    case RowAggregation::kPateGnmax:
      mechanism.noise_multipliers.assign(2 * static_cast<size_t>(shape.projection_dim), z);
      mechanism.sample_rate = 1.0;
      break;
  }
  return mechanism;
}

double VoteSumSensitivity(int top_k) { return 2.0 * std::sqrt(static_cast<double>(top_k)); }

absl::StatusOr<EpsilonAndOrder> ComposedEpsilon(const std::vector<ChargedSteps>& releases,
                                                double delta, Conversion conversion) {
  RdpAccountant accountant(Sampler::kWithoutReplacement);
  for (const ChargedSteps& release : releases) {
    RETURN_IF_ERROR(accountant.Compose(release.mechanism, release.steps));
  }
  return accountant.GetEpsilon(delta, conversion);
}

}  // namespace vfsynth::privacy
