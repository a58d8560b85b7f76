#include "common/secure/discrete_gaussian.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "common/random/secure_random.h"

namespace vfsynth::secure {
namespace {

SecureRandom Stream(unsigned char seed) {
  SecureRandom::Key key{};
  key[1] = seed;
  return SecureRandom::FromKey(key);
}

struct Pmf {
  int64_t radius;
  std::vector<double> p;  // p[x + radius]
  double variance = 0;
};

// The exact pmf exp(-x^2 / 2 sigma^2) / Z over |x| <= radius (the rest has mass < 1e-30).
Pmf ExactPmf(double sigma) {
  Pmf pmf;
  pmf.radius = static_cast<int64_t>(std::ceil(12 * sigma)) + 2;
  double z = 0;
  for (int64_t x = -pmf.radius; x <= pmf.radius; ++x) {
    pmf.p.push_back(std::exp(-static_cast<double>(x * x) / (2 * sigma * sigma)));
    z += pmf.p.back();
  }
  for (int64_t x = -pmf.radius; x <= pmf.radius; ++x) {
    double& p = pmf.p[x + pmf.radius];
    p /= z;
    pmf.variance += p * static_cast<double>(x * x);
  }
  return pmf;
}

class DiscreteGaussianTest : public ::testing::TestWithParam<double> {};

// Mean, variance and the whole pmf against the exact distribution. The chi-square pools
// cells until each expects >= 20 draws; its threshold is df + 6 sqrt(2 df), about 6 standard
// deviations. A continuous Gaussian rounded to integers fails it at sigma = 0.5 (P[0] =
// 0.683 against the exact 0.787), as does a Laplace or a wrong scale at any sigma.
TEST_P(DiscreteGaussianTest, MatchesTheExactPmf) {
  const double sigma = GetParam();
  const int draws = 200000;
  const Pmf pmf = ExactPmf(sigma);
  SecureRandom rng = Stream(static_cast<unsigned char>(sigma * 2));
  std::vector<int64_t> histogram(pmf.p.size(), 0);
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < draws; ++i) {
    auto x = SampleDiscreteGaussian(sigma, rng);
    ASSERT_TRUE(x.ok());
    ASSERT_LE(std::abs(*x), pmf.radius);
    ++histogram[*x + pmf.radius];
    sum += static_cast<double>(*x);
    sum_sq += static_cast<double>(*x) * static_cast<double>(*x);
  }
  const double mean = sum / draws;
  const double variance = sum_sq / draws - mean * mean;
  EXPECT_LT(std::abs(mean), 5 * std::sqrt(pmf.variance / draws));
  // Var of the sample variance is about 2 sigma^4 / draws for a near-Gaussian.
  EXPECT_NEAR(variance, pmf.variance, 6 * pmf.variance * std::sqrt(2.0 / draws));
  if (sigma >= 3) {
    EXPECT_NEAR(pmf.variance, sigma * sigma, 1e-6 * sigma * sigma);
  }

  double chi2 = 0;
  int cells = 0;
  double expected = 0, observed = 0;
  for (size_t i = 0; i < pmf.p.size(); ++i) {
    expected += pmf.p[i] * draws;
    observed += static_cast<double>(histogram[i]);
    if (expected >= 20 || i + 1 == pmf.p.size()) {
      chi2 += (observed - expected) * (observed - expected) / std::max(expected, 1e-9);
      ++cells;
      expected = observed = 0;
    }
  }
  const double df = cells - 1;
  EXPECT_LT(chi2, df + 6 * std::sqrt(2 * df)) << "cells " << cells;
}

INSTANTIATE_TEST_SUITE_P(Sigmas, DiscreteGaussianTest, ::testing::Values(0.5, 3.0, 40.0));

TEST(DiscreteGaussianLimitsTest, SigmaZeroIsNoiseOff) {
  SecureRandom rng = Stream(9);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(*SampleDiscreteGaussian(0.0, rng), 0);
}

TEST(DiscreteGaussianLimitsTest, BadSigmaIsRefused) {
  SecureRandom rng = Stream(10);
  for (double sigma : {-1.0, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity(), 16777217.0}) {
    EXPECT_EQ(SampleDiscreteGaussian(sigma, rng).status().code(),
              absl::StatusCode::kInvalidArgument)
        << sigma;
  }
  EXPECT_TRUE(SampleDiscreteGaussian(16777216.0, rng).ok());
}

TEST(DiscreteGaussianLimitsTest, BernoulliExpMinusHasProbabilityExpMinusGamma) {
  SecureRandom rng = Stream(11);
  for (double gamma : {0.0, 0.3, 1.0, 2.5}) {
    int hits = 0;
    const int draws = 100000;
    for (int i = 0; i < draws; ++i) hits += BernoulliExpMinus(gamma, rng) ? 1 : 0;
    const double p = std::exp(-gamma);
    EXPECT_NEAR(static_cast<double>(hits) / draws, p, 6 * std::sqrt(p * (1 - p) / draws) + 1e-12)
        << gamma;
  }
}

}  // namespace
}  // namespace vfsynth::secure
