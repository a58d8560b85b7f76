// RDP -> (ε, δ) conversions against TF Privacy / dp_accounting test vectors
// (anchors-mission §3.5).
#include "common/privacy/conversion.h"

#include <cmath>
#include <limits>
#include <vector>

#include "common/privacy/rdp.h"
#include "gtest/gtest.h"

namespace vfsynth::privacy {
namespace {

std::vector<double> IntegerOrders(int lo, int hi) {
  std::vector<double> orders;
  for (int a = lo; a <= hi; ++a) orders.push_back(a);
  return orders;
}

// TF & dp_accounting: orders 2..32, rdp ≡ 1.1, δ = 1e-5 (improved conversion).
TEST(ConversionTest, ImprovedConstantCurve) {
  const std::vector<double> orders = IntegerOrders(2, 32);
  const std::vector<double> rdp(orders.size(), 1.1);
  const EpsilonAndOrder result = *EpsilonFromRdp(orders, rdp, 1e-5, Conversion::kImproved);
  EXPECT_NEAR(result.epsilon, 1.32783806176, 1e-9);
  EXPECT_EQ(result.order, 32);
  EXPECT_TRUE(result.order_at_boundary);
  const DeltaAndOrder inverse = *DeltaFromRdp(orders, rdp, 1.32783806176, Conversion::kImproved);
  EXPECT_NEAR(inverse.delta, 1e-5, 1e-12);
  EXPECT_EQ(inverse.order, 32);
}

// Old TF Privacy (classic conversion): q=0.01, σ=4, 10000 steps, orders 2..32.
TEST(ConversionTest, ClassicPoissonTargetDeltaAndInverse) {
  const std::vector<double> orders = IntegerOrders(2, 32);
  const std::vector<double> rdp =
      *ComposedRdp(StepMechanism{{4.0}, 0.01, Sampler::kPoisson}, 10000, orders);
  const EpsilonAndOrder eps = *EpsilonFromRdp(orders, rdp, 1e-5, Conversion::kClassic);
  EXPECT_NEAR(eps.epsilon, 1.258575, 1e-6);
  EXPECT_EQ(eps.order, 20);
  EXPECT_FALSE(eps.order_at_boundary);
  const DeltaAndOrder delta = *DeltaFromRdp(orders, rdp, 1.258575, Conversion::kClassic);
  EXPECT_NEAR(delta.delta, 1e-5, 1e-9);
  EXPECT_EQ(delta.order, 20);
}

// Old TF Privacy test_check_composition (classic): two different mechanisms.
TEST(ConversionTest, ClassicCompositionOfTwoMechanisms) {
  const std::vector<double> orders = {1.25, 1.5, 1.75, 2.,  2.5, 3.,  4.,  5.,  6.,  7.,  8.,
                                      10.,  12., 14.,  16., 20., 24., 28., 32., 64., 256.};
  std::vector<double> rdp =
      *ComposedRdp(StepMechanism{{0.4}, 1e-4, Sampler::kPoisson}, 40000, orders);
  const std::vector<double> second =
      *ComposedRdp(StepMechanism{{2.0}, 0.1, Sampler::kPoisson}, 100, orders);
  for (size_t i = 0; i < rdp.size(); ++i) rdp[i] += second[i];
  const EpsilonAndOrder eps = *EpsilonFromRdp(orders, rdp, 1e-5, Conversion::kClassic);
  EXPECT_NEAR(eps.epsilon, 8.509656, 1e-5);
  EXPECT_EQ(eps.order, 2.5);
}

// TF & dp_accounting: q = 1, σ = 4.530877117, orders 1.000..99.999 step 0.001,
// δ = 1e-6 gives ε = 1.
TEST(ConversionTest, ImprovedUnsampledGaussianFineGrid) {
  std::vector<double> orders;
  for (int i = 1001; i < 100000; ++i) orders.push_back(i / 1000.0);  // order 1 is not RDP
  const std::vector<double> rdp =
      *ComposedRdp(StepMechanism{{4.530877117}, 1.0, Sampler::kPoisson}, 1, orders);
  const EpsilonAndOrder eps = *EpsilonFromRdp(orders, rdp, 1e-6, Conversion::kImproved);
  EXPECT_NEAR(eps.epsilon, 1.0, 1e-6);
  EXPECT_NEAR(eps.order, 21.985, 2e-3);
}

TEST(ConversionTest, ImprovedNeverExceedsClassic) {
  const std::vector<double> orders = IntegerOrders(2, 64);
  std::vector<double> rdp;
  for (double a : orders) rdp.push_back(0.01 * a);
  for (double delta : {1e-3, 1e-5, 1e-9}) {
    EXPECT_LT(EpsilonFromRdp(orders, rdp, delta, Conversion::kImproved)->epsilon,
              EpsilonFromRdp(orders, rdp, delta, Conversion::kClassic)->epsilon);
  }
}

TEST(ConversionTest, EdgeCases) {
  const std::vector<double> orders = {2, 3};
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(EpsilonFromRdp(orders, {inf, inf}, 1e-5, Conversion::kClassic)->epsilon, inf);
  // An infinite order is skipped, not fatal.
  EXPECT_EQ(EpsilonFromRdp(orders, {inf, 0.5}, 1e-5, Conversion::kClassic)->order, 3);
  EXPECT_FALSE(EpsilonFromRdp(orders, {0.1}, 1e-5, Conversion::kClassic).ok());
  EXPECT_FALSE(EpsilonFromRdp(orders, {0.1, 0.2}, 0.0, Conversion::kClassic).ok());
  EXPECT_FALSE(EpsilonFromRdp(orders, {0.1, 0.2}, 1.0, Conversion::kClassic).ok());
  EXPECT_FALSE(EpsilonFromRdp(orders, {-0.1, 0.2}, 1e-5, Conversion::kClassic).ok());
  // Zero RDP at moderate δ: the improved formula goes negative; clamp to 0.
  EXPECT_EQ(EpsilonFromRdp(orders, {0.1, 0.1}, 0.5, Conversion::kImproved)->epsilon, 0.0);
  // Nothing spent is ε = 0 at any δ (not the conversion's floor).
  EXPECT_EQ(EpsilonFromRdp(orders, {0.0, 0.0}, 1e-9, Conversion::kImproved)->epsilon, 0.0);
  EXPECT_EQ(EpsilonFromRdp(orders, {0.0, 0.0}, 1e-9, Conversion::kClassic)->epsilon, 0.0);
}

TEST(ConversionTest, Parse) {
  EXPECT_EQ(*ParseConversion("classic"), Conversion::kClassic);
  EXPECT_EQ(*ParseConversion("improved"), Conversion::kImproved);
  EXPECT_FALSE(ParseConversion("pld").ok());
  // The settings' enum, including a number no name stands for (a binary plan can hold one).
  EXPECT_EQ(*ConversionOf(v1::ExperimentalPrivacyConfig::classic), Conversion::kClassic);
  EXPECT_EQ(*ConversionOf(v1::ExperimentalPrivacyConfig::improved), Conversion::kImproved);
  EXPECT_FALSE(ConversionOf(static_cast<v1::ExperimentalPrivacyConfig::Conversion>(9)).ok());
}

}  // namespace
}  // namespace vfsynth::privacy
