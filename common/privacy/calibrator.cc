#include "common/privacy/calibrator.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/privacy/accountant.h"

namespace vfsynth::privacy {
namespace {

// Beyond these multipliers the search gives up: ε is then pinned at the
// conversion's floor (large z) or the target is met by essentially no noise.
constexpr double kMaxNoise = 1e6;
constexpr double kMinNoise = 1e-6;

absl::Status ValidateTarget(const CalibrationTarget& target) {
  if (!(target.epsilon > 0.0) || !std::isfinite(target.epsilon)) {
    return absl::InvalidArgumentError(
        absl::StrCat("target epsilon must be finite and > 0, got ", target.epsilon));
  }
  if (!(target.delta > 0.0 && target.delta < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("delta must be in (0, 1), got ", target.delta));
  }
  if (!(target.sample_rate > 0.0 && target.sample_rate <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample rate must be in (0, 1], got ", target.sample_rate));
  }
  if (target.steps < 1) {
    return absl::InvalidArgumentError(absl::StrCat("steps must be >= 1, got ", target.steps));
  }
  if (target.releases < 1) {
    return absl::InvalidArgumentError(absl::StrCat("releases must be >= 1, got ", target.releases));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<double> CalibrateNoiseMultiplier(const CalibrationTarget& target,
                                                double relative_tolerance) {
  RETURN_IF_ERROR(ValidateTarget(target));
  auto epsilon_at = [&](double z) -> absl::StatusOr<double> {
    StepMechanism mechanism{std::vector<double>(target.releases, z), target.sample_rate,
                            target.sampler};
    ASSIGN_OR_RETURN(const EpsilonAndOrder result,
                     ComputeEpsilon(mechanism, target.steps, target.delta, target.conversion));
    return result.epsilon;
  };
  absl::StatusOr<double> z = CalibrateNoise(epsilon_at, target.epsilon, relative_tolerance);
  if (absl::IsOutOfRange(z.status())) {
    return absl::OutOfRangeError(
        absl::StrCat(z.status().message(), " with the ", ConversionName(target.conversion),
                     " conversion (its floor at the largest RDP order); raise epsilon or delta, or "
                     "lower the sample rate or steps"));
  }
  return z;
}

absl::StatusOr<double> CalibrateNoise(
    const std::function<absl::StatusOr<double>(double z)>& epsilon_at, double target_epsilon,
    double relative_tolerance) {
  if (!(target_epsilon > 0.0) || !std::isfinite(target_epsilon)) {
    return absl::InvalidArgumentError(
        absl::StrCat("target epsilon must be finite and > 0, got ", target_epsilon));
  }
  if (!(relative_tolerance > 0.0)) {
    return absl::InvalidArgumentError("calibration tolerance must be > 0");
  }
  // Bracket [lo, hi] with ε(lo) > target >= ε(hi).
  double hi = 1.0;
  ASSIGN_OR_RETURN(double eps_hi, epsilon_at(hi));
  while (eps_hi > target_epsilon) {
    if (hi >= kMaxNoise) {
      return absl::OutOfRangeError(absl::StrCat("epsilon ", target_epsilon,
                                                " is unreachable: even noise multiplier ", hi,
                                                " gives ", eps_hi));
    }
    hi *= 2.0;
    ASSIGN_OR_RETURN(eps_hi, epsilon_at(hi));
  }
  double lo = hi / 2.0;
  ASSIGN_OR_RETURN(double eps_lo, epsilon_at(lo));
  while (eps_lo <= target_epsilon) {
    hi = lo;
    if (lo <= kMinNoise) return hi;  // the target needs (almost) no noise
    lo /= 2.0;
    ASSIGN_OR_RETURN(eps_lo, epsilon_at(lo));
  }
  while (hi - lo > relative_tolerance * hi) {
    const double mid = 0.5 * (lo + hi);
    ASSIGN_OR_RETURN(const double eps_mid, epsilon_at(mid));
    if (eps_mid > target_epsilon) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return hi;
}

}  // namespace vfsynth::privacy
