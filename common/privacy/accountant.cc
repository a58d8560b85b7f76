#include "common/privacy/accountant.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace vfsynth::privacy {

RdpAccountant::RdpAccountant(Sampler sampler, std::vector<double> orders)
    : sampler_(sampler),
      orders_(orders.empty() ? DefaultOrders(sampler) : std::move(orders)),
      rdp_(orders_.size(), 0.0) {}

absl::StatusOr<const std::vector<double>*> RdpAccountant::StepCurve(
    const StepMechanism& mechanism) const {
  if (mechanism.sampler != sampler_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mechanism uses sampler ", SamplerName(mechanism.sampler), " but the accountant ",
        SamplerName(sampler_), " (their adjacency notions differ; do not mix them)"));
  }
  ASSIGN_OR_RETURN(const double z, MechanismNoiseMultiplier(mechanism));
  const StepKey key{mechanism.sample_rate, z, mechanism.randomized_responses};
  auto it = step_cache_.find(key);
  if (it == step_cache_.end()) {
    ASSIGN_OR_RETURN(std::vector<double> curve, ComposedRdp(mechanism, 1, orders_));
    it = step_cache_.emplace(key, std::move(curve)).first;
  }
  return &it->second;
}

absl::StatusOr<std::vector<double>> RdpAccountant::Increment(const StepMechanism& mechanism,
                                                             int64_t steps) const {
  if (steps < 0) return absl::InvalidArgumentError(absl::StrCat("steps must be >= 0, got ", steps));
  ASSIGN_OR_RETURN(const std::vector<double>* step, StepCurve(mechanism));
  std::vector<double> increment(step->size(), 0.0);
  if (steps == 0) return increment;
  for (size_t i = 0; i < step->size(); ++i) increment[i] = (*step)[i] * static_cast<double>(steps);
  return increment;
}

absl::Status RdpAccountant::Compose(const StepMechanism& mechanism, int64_t steps) {
  ASSIGN_OR_RETURN(const std::vector<double> increment, Increment(mechanism, steps));
  for (size_t i = 0; i < rdp_.size(); ++i) rdp_[i] += increment[i];
  return absl::OkStatus();
}

absl::StatusOr<EpsilonAndOrder> RdpAccountant::GetEpsilon(double delta,
                                                          Conversion conversion) const {
  return EpsilonFromRdp(orders_, rdp_, delta, conversion);
}

absl::StatusOr<EpsilonAndOrder> ComputeEpsilon(const StepMechanism& mechanism, int64_t steps,
                                               double delta, Conversion conversion) {
  RdpAccountant accountant(mechanism.sampler);
  RETURN_IF_ERROR(accountant.Compose(mechanism, steps));
  return accountant.GetEpsilon(delta, conversion);
}

}  // namespace vfsynth::privacy
