#ifndef VFSYNTH_COMMON_PRIVACY_RDP_H_
#define VFSYNTH_COMMON_PRIVACY_RDP_H_

// Rényi-DP of the subsampled Gaussian mechanism (docs/privacy.md, "Accounting").
//
// A noise multiplier z is noise std / L2 sensitivity under the sampler's
// adjacency: replace-one for kWithoutReplacement (sensitivity 2C, std z·2C, as in
// docs/privacy.md, VFLGAN and GS-WGAN), add/remove-one for kPoisson (sensitivity C,
// std z·C, as in Opacus). Either way the unsampled Gaussian is (α, α/(2z²))-RDP.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth::privacy {

enum class Sampler {
  // Fixed-size batch, uniform without replacement (what vfsynth does);
  // Wang, Balle, Kasiviswanathan 2019, Thm 9.
  kWithoutReplacement,
  // Each record independently with probability q; Mironov, Talwar, Zhang 2019.
  kPoisson,
};

// "wor" | "poisson".
absl::StatusOr<Sampler> ParseSampler(absl::string_view name);
std::string SamplerName(Sampler sampler);

// What one step (one sampled batch) releases about a record: R Gaussian
// releases, all computed from the same batch, so the batch's sampling event is
// shared and amplification applies once to their composition.
struct StepMechanism {
  std::vector<double> noise_multipliers;  // one per release, each > 0
  double sample_rate = 1.0;               // q = B/N in (0, 1]
  Sampler sampler = Sampler::kWithoutReplacement;
  // Randomized-response releases of one categorical value per record, each by its ε
  // (RandomizedResponseRdp). Only unsampled (sample_rate 1): no amplification bound
  // for them is implemented.
  std::vector<double> randomized_responses = {};
};

// Checks q in [0, 1], at least one release, every z > 0 and finite, every
// randomized-response ε > 0 and finite, and randomized responses only at q = 1.
absl::Status ValidateMechanism(const StepMechanism& mechanism);
// ValidateMechanism, then the Gaussian releases' EffectiveNoiseMultiplier, or 0 when
// the mechanism has randomized responses only.
absl::StatusOr<double> MechanismNoiseMultiplier(const StepMechanism& mechanism);

// R releases with multipliers z_j compose to one Gaussian with
// z_eff = (sum_j z_j^-2)^(-1/2) (RDP adds: sum_j α/(2 z_j²) = α/(2 z_eff²)).
absl::StatusOr<double> EffectiveNoiseMultiplier(const std::vector<double>& noise_multipliers);

// Orders the accountant evaluates when the caller names none:
// without replacement, the integers 2..256 (Thm 9 holds for integer orders);
// Poisson, Opacus's defaults 1.1, 1.2, ..., 10.9, 12, 13, ..., 63.
std::vector<double> DefaultOrders(Sampler sampler);

// RDP of the Gaussian mechanism at `order`: order / (2 z²).
double GaussianRdp(double noise_multiplier, double order);

// RDP at `order` > 1 of randomized response with parameter ε over two categories:
// the true value with probability e^ε / (e^ε + 1), else the other. For neighbours whose
// values differ, D_α = log((e^{αε} + e^{(1−α)ε}) / (e^ε + 1)) / (α − 1) in both
// directions. k-ary randomized response (the true category with probability
// e^ε / (e^ε + k − 1), each other one with 1 / (e^ε + k − 1)) has
// D_α = log((e^{αε} + e^{(1−α)ε} + k − 2) / (e^ε + k − 1)) / (α − 1), which falls with k:
// the binary curve bounds every k. It tends to ε as α grows (ε-DP) and stays below
// α·ε²/2 (Bun and Steinke's bound for ε-DP).
double RandomizedResponseRdp(double epsilon, double order);
// The ε whose randomized response has RDP `rdp` (> 0) at `order` (> 1); the curve rises
// with ε.
double RandomizedResponseEpsilonForRdp(double rdp, double order);

// One step of the Gaussian subsampled without replacement at rate q
// (Wang-Balle-Kasiviswanathan Thm 9 with ε(∞) = ∞, capped by the unsampled
// Gaussian). Integer orders >= 2 use the theorem directly; a fractional order
// interpolates the cumulant (α-1)·RDP(α) linearly between its integer
// neighbours (a valid bound: the cumulant is convex), orders in (1, 2) use
// RDP(2) (RDP is non-decreasing in α).
absl::StatusOr<double> WorSubsampledGaussianRdp(double q, double noise_multiplier, double order);

// One step of the Poisson-subsampled Gaussian (as Opacus / TF Privacy compute
// it, including the signed series for fractional orders). Order must be > 1.
absl::StatusOr<double> PoissonSubsampledGaussianRdp(double q, double noise_multiplier,
                                                    double order);

// RDP at each order of `steps` compositions of `mechanism`.
absl::StatusOr<std::vector<double>> ComposedRdp(const StepMechanism& mechanism, int64_t steps,
                                                const std::vector<double>& orders);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_RDP_H_
