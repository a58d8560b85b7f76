// dpsgd's split of each critic step's privacy between the K party releases and the
// curator's D_s release (RunShape::shared_critic_share): the step composes to the same
// Gaussian for every share, so the joint epsilon, the calibration and the ledger do not
// move, while each party's own epsilon falls as D_s's share grows.
#include <cmath>
#include <vector>

#include "common/privacy/accountant.h"
#include "common/privacy/rdp.h"
#include "common/privacy/run_accounting.h"
#include "gtest/gtest.h"
#include "tests/unit/privacy/adult_run_shape.h"

namespace vfsynth::privacy {
namespace {

RunShape Shape(int parties, double share) {
  RunShape shape = AdultRunShape(parties, 10000);
  shape.shared_critic_share = share;
  return shape;
}

double SumOfInverseSquares(const std::vector<double>& multipliers) {
  double sum = 0;
  for (double z : multipliers) sum += 1 / (z * z);
  return sum;
}

TEST(ReleaseSplitTest, AdultAtEpsilonTenGivesTheDocumentedMultipliers) {
  // z = 2.5995 calibrates ε = 10 over 10000 rounds (a dpsgd run); the share 0.85
  // gives D_s 0.85 of 4/z² and each party 0.05 of it.
  const ReleaseNoise noise = SplitReleaseNoise(v1::PrivacyConfig::dpsgd, 2.5995, Shape(3, 0.85));
  EXPECT_NEAR(noise.shared_critic, 1.40978, 1e-5);
  EXPECT_NEAR(noise.party, 5.81266, 1e-5);
}

TEST(ReleaseSplitTest, EvenShareOrNoShareLeavesEveryReleaseAtZ) {
  for (int parties : {2, 3, 8}) {
    for (double share : {0.0, 1.0 / (parties + 1)}) {
      const ReleaseNoise noise =
          SplitReleaseNoise(v1::PrivacyConfig::dpsgd, 1.7, Shape(parties, share));
      EXPECT_EQ(noise.party, 1.7) << parties << " " << share;  // exactly: ledgers compare charges
      EXPECT_EQ(noise.shared_critic, 1.7) << parties << " " << share;
    }
  }
  EXPECT_EQ(DescribeReleaseNoise(v1::PrivacyConfig::dpsgd, 1.7, Shape(3, 0)), "");
  EXPECT_NE(DescribeReleaseNoise(v1::PrivacyConfig::dpsgd, 1.7, Shape(3, 0.85)).find("D_s 0.9220"),
            std::string::npos);
}

TEST(ReleaseSplitTest, OtherModesIgnoreTheShare) {
  for (Mode mode : {v1::PrivacyConfig::strict, v1::PrivacyConfig::vflgan}) {
    const ReleaseNoise noise = SplitReleaseNoise(mode, 1.7, Shape(3, 0.85));
    EXPECT_EQ(noise.party, 1.7);
    EXPECT_EQ(noise.shared_critic, 1.7);
    for (double z : JointMechanism(mode, 1.7, Shape(3, 0.85)).noise_multipliers) EXPECT_EQ(z, 1.7);
  }
}

TEST(ReleaseSplitTest, TheStepComposesToTheSameGaussianForEveryShare) {
  for (int parties : {2, 3, 5}) {
    for (double share : {0.1, 0.5, 0.7, 0.85, 0.95}) {
      const RunShape shape = Shape(parties, share);
      const StepMechanism joint = JointMechanism(v1::PrivacyConfig::dpsgd, 2.0, shape);
      ASSERT_EQ(joint.noise_multipliers.size(), static_cast<size_t>(parties + 1));
      const double shared = joint.noise_multipliers.back();
      // D_s gets `share` of the step's 1/z² and each party an equal part of the rest.
      EXPECT_NEAR(1 / (shared * shared) / SumOfInverseSquares(joint.noise_multipliers), share,
                  1e-12);
      for (int k = 0; k < parties; ++k)
        EXPECT_EQ(joint.noise_multipliers[k], joint.noise_multipliers[0]);
      absl::StatusOr<double> effective = EffectiveNoiseMultiplier(joint.noise_multipliers);
      ASSERT_TRUE(effective.ok());
      EXPECT_NEAR(*effective, 2.0 / std::sqrt(parties + 1.0), 1e-12);
      // So the run's joint epsilon is the even split's.
      const auto split = RunEpsilon(v1::PrivacyConfig::dpsgd, 2.0, shape, 10000, View::kJoint, 1e-5,
                                    Conversion::kImproved);
      const auto even = RunEpsilon(v1::PrivacyConfig::dpsgd, 2.0, Shape(parties, 0), 10000,
                                   View::kJoint, 1e-5, Conversion::kImproved);
      ASSERT_TRUE(split.ok() && even.ok());
      EXPECT_NEAR(split->epsilon, even->epsilon, 1e-9 * even->epsilon);
    }
  }
}

TEST(ReleaseSplitTest, CalibrationIsUnchangedAndAPartysOwnEpsilonFallsWithTheShare) {
  const auto even =
      CalibrateRunNoise(v1::PrivacyConfig::dpsgd, 10, 1e-5, Conversion::kImproved, Shape(3, 0));
  const auto split =
      CalibrateRunNoise(v1::PrivacyConfig::dpsgd, 10, 1e-5, Conversion::kImproved, Shape(3, 0.85));
  ASSERT_TRUE(even.ok() && split.ok());
  EXPECT_NEAR(*split, *even, 1e-9);
  double last = 1e300;
  for (double share : {0.25, 0.5, 0.7, 0.85}) {
    const auto own = RunEpsilon(v1::PrivacyConfig::dpsgd, *split, Shape(3, share), 10000,
                                View::kParty, 1e-5, Conversion::kImproved);
    ASSERT_TRUE(own.ok());
    EXPECT_LT(own->epsilon, last) << share;
    last = own->epsilon;
  }
}

TEST(ReleaseSplitTest, LedgerChargesComposeToThePlan) {
  const RunShape shape = Shape(3, 0.85);
  RdpAccountant charged(Sampler::kWithoutReplacement);
  for (int64_t step = 0; step < 100; ++step) {
    const LedgerCharge charge = CriticStepCharge(v1::PrivacyConfig::dpsgd, 2.6, shape, step);
    ASSERT_TRUE(charged.Compose(charge.mechanism, charge.steps).ok());
  }
  const auto planned = RunEpsilon(v1::PrivacyConfig::dpsgd, 2.6, shape, 100, View::kJoint, 1e-5,
                                  Conversion::kImproved);
  ASSERT_TRUE(planned.ok());
  EXPECT_NEAR(charged.GetEpsilon(1e-5, Conversion::kImproved)->epsilon, planned->epsilon, 1e-9);
}

}  // namespace
}  // namespace vfsynth::privacy
