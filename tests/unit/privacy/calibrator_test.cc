#include "common/privacy/calibrator.h"

#include <vector>

#include "common/privacy/accountant.h"
#include "gtest/gtest.h"

namespace vfsynth::privacy {
namespace {

double EpsilonOf(double z, const CalibrationTarget& t) {
  StepMechanism mechanism{std::vector<double>(t.releases, z), t.sample_rate, t.sampler};
  return ComputeEpsilon(mechanism, t.steps, t.delta, t.conversion)->epsilon;
}

// calibrate(epsilon(z)) == z, for both samplers, both conversions, R releases.
TEST(CalibratorTest, InvertsTheAccountant) {
  struct Case {
    double z;
    CalibrationTarget target;
  };
  const std::vector<Case> cases = {
      {0.6128,
       {0, 1e-5, 64 / 42960.0, 40260, 1, Conversion::kClassic, Sampler::kWithoutReplacement}},
      {0.8, {0, 1e-5, 64 / 42960.0, 40260, 1, Conversion::kImproved, Sampler::kWithoutReplacement}},
      {2.5, {0, 1e-5, 0.01, 5000, 4, Conversion::kImproved, Sampler::kWithoutReplacement}},
      {1.1, {0, 1e-5, 0.01, 10000, 1, Conversion::kImproved, Sampler::kPoisson}},
  };
  for (Case c : cases) {
    c.target.epsilon = EpsilonOf(c.z, c.target);
    const absl::StatusOr<double> z = CalibrateNoiseMultiplier(c.target);
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_NEAR(*z, c.z, 1e-4 * c.z) << "epsilon " << c.target.epsilon;
    EXPECT_LE(EpsilonOf(*z, c.target), c.target.epsilon);  // never over budget
  }
}

// Opacus get_noise_multiplier (ε=8, δ=1e-5, q=0.04): 2000 steps -> 1.3562,
// 90 epochs (2250 steps) -> 1.416. Opacus stops once ε is within 0.01 below
// the target, so its σ can sit slightly above the exact root found here.
TEST(CalibratorTest, OpacusNoiseMultipliers) {
  CalibrationTarget target{8.0, 1e-5, 0.04, 2000, 1, Conversion::kImproved, Sampler::kPoisson};
  EXPECT_NEAR(*CalibrateNoiseMultiplier(target), 1.3562, 2e-3);
  target.steps = 2250;
  EXPECT_NEAR(*CalibrateNoiseMultiplier(target), 1.416, 2e-3);
}

TEST(CalibratorTest, ImpossibleAndInvalidTargets) {
  CalibrationTarget target{
      0.01, 1e-5, 1.0, 1000, 1, Conversion::kClassic, Sampler::kWithoutReplacement};
  // Classic at orders <= 256 cannot go below log(1/δ)/255 ≈ 0.045 unless the
  // RDP drops under δ² (then (0, δ)-DP), which here needs z > 3e6.
  EXPECT_EQ(CalibrateNoiseMultiplier(target).status().code(), absl::StatusCode::kOutOfRange);
  target.epsilon = 5;
  target.sample_rate = 0.0;
  EXPECT_EQ(CalibrateNoiseMultiplier(target).status().code(), absl::StatusCode::kInvalidArgument);
  target.sample_rate = 0.01;
  target.delta = 1.0;
  EXPECT_EQ(CalibrateNoiseMultiplier(target).status().code(), absl::StatusCode::kInvalidArgument);
  target.delta = 1e-5;
  target.releases = 0;
  EXPECT_EQ(CalibrateNoiseMultiplier(target).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vfsynth::privacy
