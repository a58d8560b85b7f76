// Accounting of the one-off marginal release (training.marginal_weight > 0): a Gaussian
// per party over all records, composed with the run's per-step releases, charged as
// ledger key 0 ahead of the critic steps.
#include <cmath>
#include <limits>
#include <vector>

#include "common/privacy/accountant.h"
#include "common/privacy/run_accounting.h"
#include "gtest/gtest.h"
#include "tests/unit/privacy/adult_run_shape.h"

namespace vfsynth::privacy {
namespace {

RunShape Shape(double marginal_noise_multiplier) {
  RunShape shape = AdultRunShape(3, 2000);
  shape.marginal_noise_multiplier = marginal_noise_multiplier;
  return shape;
}

// K unsampled Gaussians with multiplier z: RDP K·α/(2z²); the classic conversion,
// written out over the accountant's integer orders 2..256.
double ClassicGaussianEpsilon(int releases, double z, double delta) {
  double best = std::numeric_limits<double>::infinity();
  for (int a = 2; a <= 256; ++a) {
    best = std::min(best, releases * a / (2 * z * z) + std::log(1 / delta) / (a - 1));
  }
  return best;
}

TEST(MarginalAccountingTest, TheReleaseAloneIsAnUnsampledGaussianPerParty) {
  const RunShape shape = Shape(30.0);
  const std::vector<ChargedSteps> joint =
      RunReleases(v1::PrivacyConfig::strict, 2.0, shape, 0, View::kJoint);
  ASSERT_EQ(joint.size(), 1u);
  EXPECT_EQ(joint[0].steps, 1);
  EXPECT_EQ(joint[0].mechanism.noise_multipliers, std::vector<double>(3, 30.0));
  EXPECT_DOUBLE_EQ(joint[0].mechanism.sample_rate, 1.0);
  EXPECT_EQ(RunReleases(v1::PrivacyConfig::strict, 2.0, shape, 0, View::kParty)[0]
                .mechanism.noise_multipliers.size(),
            1u);
  absl::StatusOr<EpsilonAndOrder> eps = RunEpsilon(v1::PrivacyConfig::strict, 2.0, shape, 0,
                                                   View::kJoint, 1e-5, Conversion::kClassic);
  ASSERT_TRUE(eps.ok()) << eps.status();
  EXPECT_NEAR(eps->epsilon, ClassicGaussianEpsilon(3, 30.0, 1e-5), 1e-9);
  // Mode none releases nothing, and neither does a run without the marginal loss.
  EXPECT_TRUE(RunReleases(v1::PrivacyConfig::none, 2.0, shape, 100, View::kJoint).empty());
  EXPECT_EQ(RunReleases(v1::PrivacyConfig::dpsgd, 2.0, Shape(0), 100, View::kJoint).size(), 1u);
}

// Label pairs join the release: the holder's labels (randomized response at the label's
// ε) and the K − 1 other parties' tables (at the marginal multiplier). A single party's
// view counts one table and the labels, since it may hold either.
TEST(MarginalAccountingTest, LabelPairsAreAddedToTheRelease) {
  RunShape shape = Shape(30.0);
  shape.label_epsilon = 1.5;
  const std::vector<ChargedSteps> joint =
      RunReleases(v1::PrivacyConfig::strict, 2.0, shape, 0, View::kJoint);
  ASSERT_EQ(joint.size(), 1u);
  const std::vector<double> expected(5, 30.0);
  EXPECT_EQ(joint[0].mechanism.noise_multipliers, expected);
  EXPECT_EQ(joint[0].mechanism.randomized_responses, std::vector<double>{1.5});
  const StepMechanism party =
      RunReleases(v1::PrivacyConfig::strict, 2.0, shape, 0, View::kParty)[0].mechanism;
  EXPECT_EQ(party.noise_multipliers, (std::vector<double>{30.0, 30.0}));
  EXPECT_EQ(party.randomized_responses, std::vector<double>{1.5});
  const std::optional<LedgerCharge> charge = MarginalReleaseCharge(v1::PrivacyConfig::dpsgd, shape);
  ASSERT_TRUE(charge.has_value());
  EXPECT_EQ(charge->mechanism.noise_multipliers, expected);
  EXPECT_EQ(charge->mechanism.randomized_responses, std::vector<double>{1.5});
  // The release's curve is the five Gaussians' plus the randomized response's, order by order.
  absl::StatusOr<std::vector<double>> curve = ComposedRdp(charge->mechanism, 1, {2.0, 8.0, 64.0});
  ASSERT_TRUE(curve.ok()) << curve.status();
  for (size_t i = 0; i < 3; ++i) {
    const double order = std::vector<double>{2.0, 8.0, 64.0}[i];
    EXPECT_NEAR((*curve)[i], 5 * GaussianRdp(30.0, order) + RandomizedResponseRdp(1.5, order),
                1e-12);
  }
  // Calibrating the run leaves room for the labels: the per-step noise grows.
  absl::StatusOr<double> without =
      CalibrateRunNoise(v1::PrivacyConfig::strict, 10.0, 1e-5, Conversion::kImproved, Shape(30.0));
  absl::StatusOr<double> with =
      CalibrateRunNoise(v1::PrivacyConfig::strict, 10.0, 1e-5, Conversion::kImproved, shape);
  ASSERT_TRUE(without.ok() && with.ok());
  EXPECT_GT(*with, *without);
  absl::StatusOr<EpsilonAndOrder> spent = RunEpsilon(v1::PrivacyConfig::strict, *with, shape, 2000,
                                                     View::kJoint, 1e-5, Conversion::kImproved);
  ASSERT_TRUE(spent.ok());
  EXPECT_NEAR(spent->epsilon, 10.0, 1e-3);
}

TEST(MarginalAccountingTest, LedgerChargesComposeToThePlan) {
  for (Mode mode : {v1::PrivacyConfig::dpsgd, v1::PrivacyConfig::strict}) {
    const RunShape shape = Shape(30.0);
    RdpAccountant charged(Sampler::kWithoutReplacement);
    const std::optional<LedgerCharge> marginals = MarginalReleaseCharge(mode, shape);
    ASSERT_TRUE(marginals.has_value());
    EXPECT_EQ(marginals->key, 0);
    ASSERT_TRUE(charged.Compose(marginals->mechanism, marginals->steps).ok());
    int64_t last_key = marginals->key;
    for (int64_t step = 0; step < 50; ++step) {
      const LedgerCharge charge = CriticStepCharge(mode, 1.5, shape, step);
      EXPECT_GT(charge.key, last_key);  // the critic steps come after the release
      last_key = charge.key;
      ASSERT_TRUE(charged.Compose(charge.mechanism, charge.steps).ok());
    }
    absl::StatusOr<EpsilonAndOrder> planned =
        RunEpsilon(mode, 1.5, shape, 50, View::kJoint, 1e-5, Conversion::kImproved);
    ASSERT_TRUE(planned.ok());
    EXPECT_NEAR(charged.GetEpsilon(1e-5, Conversion::kImproved)->epsilon, planned->epsilon, 1e-9);
  }
  EXPECT_FALSE(MarginalReleaseCharge(v1::PrivacyConfig::none, Shape(30.0)).has_value());
  EXPECT_FALSE(MarginalReleaseCharge(v1::PrivacyConfig::strict, Shape(0)).has_value());
  EXPECT_EQ(CriticStepCharge(v1::PrivacyConfig::strict, 1.5, Shape(0), 7).key,
            7);  // no release, no shift
}

TEST(MarginalAccountingTest, CalibrationLeavesRoomForTheRelease) {
  for (double epsilon : {1.0, 10.0}) {
    absl::StatusOr<double> with = CalibrateRunNoise(v1::PrivacyConfig::strict, epsilon, 1e-5,
                                                    Conversion::kImproved, Shape(30.0));
    absl::StatusOr<double> without = CalibrateRunNoise(v1::PrivacyConfig::strict, epsilon, 1e-5,
                                                       Conversion::kImproved, Shape(0));
    ASSERT_TRUE(with.ok()) << with.status();
    ASSERT_TRUE(without.ok()) << without.status();
    EXPECT_GT(*with, *without);  // the steps get more noise: the release spends part of ε
    const double at = RunEpsilon(v1::PrivacyConfig::strict, *with, Shape(30.0), 2000, View::kJoint,
                                 1e-5, Conversion::kImproved)
                          ->epsilon;
    EXPECT_LE(at, epsilon);
    EXPECT_NEAR(at, epsilon, 1e-3 * epsilon);
  }
  // A release that alone spends more than the budget cannot be calibrated around.
  absl::StatusOr<double> z =
      CalibrateRunNoise(v1::PrivacyConfig::strict, 0.05, 1e-5, Conversion::kImproved, Shape(2.0));
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("marginal_noise_multiplier"), std::string::npos)
      << z.status();
}

}  // namespace
}  // namespace vfsynth::privacy
