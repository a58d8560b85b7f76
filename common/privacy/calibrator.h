#ifndef VFSYNTH_COMMON_PRIVACY_CALIBRATOR_H_
#define VFSYNTH_COMMON_PRIVACY_CALIBRATOR_H_

// Noise calibration before training: the smallest noise multiplier whose ε
// stays within a target.

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "common/privacy/conversion.h"
#include "common/privacy/rdp.h"

namespace vfsynth::privacy {

struct CalibrationTarget {
  double epsilon = 0.0;
  double delta = 0.0;
  double sample_rate = 0.0;  // q in (0, 1]
  int64_t steps = 0;         // sampled steps (critic rounds) to account for
  int releases = 1;          // Gaussian releases per step, all with the same multiplier
  Conversion conversion = Conversion::kImproved;
  Sampler sampler = Sampler::kWithoutReplacement;
};

// Bisection on z (ε is decreasing in z) until the bracket is narrower than
// relative_tolerance·z; returns the upper end, so ε(result) <= target.epsilon
// always. InvalidArgument for bad inputs; OutOfRange when no finite noise
// reaches the target within z <= 1e6 (ε cannot go below the conversion's floor
// at the largest order, e.g. log(1/δ)/255 for classic at orders <= 256, until
// the RDP itself falls under δ²).
absl::StatusOr<double> CalibrateNoiseMultiplier(const CalibrationTarget& target,
                                                double relative_tolerance = 1e-6);

// The same bisection for any run whose ε is decreasing in one noise multiplier z
// (e.g. the ensemble modes, which compose several kinds of release): the smallest z
// with epsilon_at(z) <= target_epsilon, up to relative_tolerance.
absl::StatusOr<double> CalibrateNoise(
    const std::function<absl::StatusOr<double>(double z)>& epsilon_at, double target_epsilon,
    double relative_tolerance = 1e-6);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_CALIBRATOR_H_
