#ifndef VFSYNTH_COMMON_PRIVACY_ACCOUNTANT_H_
#define VFSYNTH_COMMON_PRIVACY_ACCOUNTANT_H_

// Composition over steps (and over differing mechanisms) on a fixed order grid.

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/privacy/conversion.h"
#include "common/privacy/rdp.h"

namespace vfsynth::privacy {

class RdpAccountant {
 public:
  // Evaluates RDP at DefaultOrders(sampler), or at `orders` if non-empty.
  explicit RdpAccountant(Sampler sampler, std::vector<double> orders = {});

  // Adds `steps` compositions of `mechanism` (its sampler must match). Per-step
  // curves are cached: a training run charges the same mechanism every round.
  absl::Status Compose(const StepMechanism& mechanism, int64_t steps = 1);

  // The curve `Compose(mechanism, steps)` would add, without adding it.
  absl::StatusOr<std::vector<double>> Increment(const StepMechanism& mechanism,
                                                int64_t steps = 1) const;

  absl::StatusOr<EpsilonAndOrder> GetEpsilon(double delta, Conversion conversion) const;

  Sampler sampler() const { return sampler_; }
  const std::vector<double>& orders() const { return orders_; }
  const std::vector<double>& rdp() const { return rdp_; }

 private:
  absl::StatusOr<const std::vector<double>*> StepCurve(const StepMechanism& mechanism) const;

  Sampler sampler_;
  std::vector<double> orders_;
  std::vector<double> rdp_;
  // (q, z_eff, randomized-response εs) -> one step's RDP at orders_.
  using StepKey = std::tuple<double, double, std::vector<double>>;
  mutable std::map<StepKey, std::vector<double>> step_cache_;
};

// ε after `steps` compositions of `mechanism`, at the sampler's default orders.
absl::StatusOr<EpsilonAndOrder> ComputeEpsilon(const StepMechanism& mechanism, int64_t steps,
                                               double delta, Conversion conversion);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_ACCOUNTANT_H_
