// RDP of the subsampled Gaussian: numerics, special cases, and the single-step
// values published in Opacus / TF Privacy tests (anchors-mission §3.5).
#include "common/privacy/rdp.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "common/privacy/log_math.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vfsynth::privacy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(LogMathTest, LogErfcMatchesErfcAndStaysFiniteInTheTail) {
  for (double x : {-5.0, -1.0, 0.0, 0.5, 3.0, 10.0, 24.0}) {
    EXPECT_NEAR(LogErfc(x), std::log(std::erfc(x)), 1e-12 * std::max(1.0, x * x)) << x;
  }
  // Continuity across the switch to the asymptotic series at 25.
  EXPECT_NEAR(LogErfc(24.999999), LogErfc(25.0), 1e-4);
  // erfc(40) underflows a double; log erfc(x) ~ -x² - log(x·sqrt(pi)).
  const double x = 40.0;
  EXPECT_TRUE(std::isfinite(LogErfc(x)));
  EXPECT_NEAR(LogErfc(x), -x * x - std::log(x * std::sqrt(M_PI)), 1e-3);
}

TEST(LogMathTest, LogAddSubAndSumExp) {
  EXPECT_NEAR(LogAdd(std::log(2.0), std::log(3.0)), std::log(5.0), 1e-15);
  EXPECT_NEAR(LogSub(std::log(5.0), std::log(3.0)), std::log(2.0), 1e-15);
  EXPECT_EQ(LogSub(1.0, 1.0), -kInf);
  EXPECT_NEAR(LogSumExp({1000.0, 1000.0}), 1000.0 + std::log(2.0), 1e-12);
  EXPECT_NEAR(LogBinomial(10, 3), std::log(120.0), 1e-12);
  EXPECT_NEAR(LogGamma(0.5), 0.5 * std::log(M_PI), 1e-14);
  EXPECT_NEAR(LogGamma(-0.5), std::log(2.0 * std::sqrt(M_PI)), 1e-14);  // Gamma(-1/2) = -2 sqrt(pi)
  EXPECT_NEAR(LogGamma(171.0), std::log(std::tgamma(171.0)), 1e-10);
  EXPECT_NEAR(LogExpm1(1e-10), std::log(1e-10), 1e-9);
  EXPECT_NEAR(LogExpm1(1000.0), 1000.0, 1e-12);
}

TEST(RdpTest, EffectiveNoiseMultiplierComposesReleases) {
  EXPECT_NEAR(*EffectiveNoiseMultiplier({2.0, 2.0, 2.0, 2.0}), 1.0, 1e-15);
  EXPECT_NEAR(*EffectiveNoiseMultiplier({1.0, 2.0}), 1.0 / std::sqrt(1.25), 1e-15);
  EXPECT_FALSE(EffectiveNoiseMultiplier({}).ok());
  EXPECT_FALSE(EffectiveNoiseMultiplier({1.0, -1.0}).ok());
  EXPECT_FALSE(EffectiveNoiseMultiplier({0.0}).ok());
}

// k-ary randomized response, straight from its definition: the Rényi divergence
// between the output distributions for two different true categories (y = 0, y' = 1).
double KaryRandomizedResponseRdp(double epsilon, int k, double order) {
  const double p = std::exp(epsilon) / (std::exp(epsilon) + k - 1);
  const double q = 1.0 / (std::exp(epsilon) + k - 1);
  std::vector<double> from(k, q), to(k, q);
  from[0] = p;
  to[1] = p;
  double sum = 0;
  for (int c = 0; c < k; ++c) sum += std::pow(from[c], order) * std::pow(to[c], 1 - order);
  return std::log(sum) / (order - 1);
}

TEST(RdpTest, RandomizedResponseRdpIsTheRenyiDivergenceOfItsOutputs) {
  for (double epsilon : {0.05, 0.5, 0.98, 3.0}) {
    for (double order : {1.5, 2.0, 3.725, 8.0, 64.0}) {
      const double binary = RandomizedResponseRdp(epsilon, order);
      EXPECT_NEAR(binary, KaryRandomizedResponseRdp(epsilon, 2, order), 1e-12)
          << epsilon << " " << order;
      // More categories spread the same ε's outputs thinner: the binary curve bounds them.
      EXPECT_LT(KaryRandomizedResponseRdp(epsilon, 3, order), binary) << epsilon << " " << order;
      EXPECT_LT(KaryRandomizedResponseRdp(epsilon, 7, order), binary) << epsilon << " " << order;
      // ε-DP: at most ε, and at most α·ε²/2 (Bun and Steinke 2016, Prop. 1.4).
      EXPECT_LE(binary, epsilon) << epsilon << " " << order;
      EXPECT_LE(binary, order * epsilon * epsilon / 2) << epsilon << " " << order;
      EXPECT_GT(binary, 0.0);
    }
  }
  // Towards ε at large orders, and finite where e^{αε} overflows a double.
  EXPECT_NEAR(RandomizedResponseRdp(1.0, 1e5), 1.0, 1e-4);
  // At α = 256, ε = 5 the direct sum overflows (e^{αε}); the closed form does not:
  // log(e^{αε} + e^{(1−α)ε}) − log(e^ε + 1) = αε − log(e^ε + 1) + log1p(e^{(1−2α)ε}).
  EXPECT_TRUE(std::isinf(KaryRandomizedResponseRdp(5.0, 2, 256.0)));
  EXPECT_NEAR(RandomizedResponseRdp(5.0, 256.0),
              (256.0 * 5.0 - std::log(std::exp(5.0) + 1)) / 255.0, 1e-12);
  // The inverse: the ε whose curve passes through a point.
  for (double rdp : {0.01, 0.45, 0.9}) {
    const double epsilon = RandomizedResponseEpsilonForRdp(rdp, 3.725);
    EXPECT_NEAR(RandomizedResponseRdp(epsilon, 3.725), rdp, 1e-12) << rdp;
  }
}

TEST(RdpTest, RandomizedResponseComposesWithGaussiansOnlyUnsampled) {
  StepMechanism mechanism;
  mechanism.randomized_responses = {0.7};
  absl::StatusOr<std::vector<double>> alone = ComposedRdp(mechanism, 2, {2.0, 10.0});
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_NEAR((*alone)[0], 2 * RandomizedResponseRdp(0.7, 2.0), 1e-12);
  EXPECT_NEAR((*alone)[1], 2 * RandomizedResponseRdp(0.7, 10.0), 1e-12);
  mechanism.noise_multipliers = {3.0};
  absl::StatusOr<std::vector<double>> both = ComposedRdp(mechanism, 1, {10.0});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_NEAR((*both)[0], GaussianRdp(3.0, 10.0) + RandomizedResponseRdp(0.7, 10.0), 1e-12);
  mechanism.sample_rate = 0.01;  // no amplification bound for randomized response here
  EXPECT_THAT(ComposedRdp(mechanism, 1, {10.0}).status().message(),
              ::testing::HasSubstr("unsampled"));
  mechanism.sample_rate = 1.0;
  mechanism.randomized_responses = {0.0};
  EXPECT_FALSE(ValidateMechanism(mechanism).ok());
  mechanism.randomized_responses.clear();
  mechanism.noise_multipliers.clear();
  EXPECT_FALSE(ValidateMechanism(mechanism).ok());  // nothing released
}

TEST(RdpTest, DefaultOrders) {
  const std::vector<double> wor = DefaultOrders(Sampler::kWithoutReplacement);
  ASSERT_EQ(wor.size(), 255u);
  EXPECT_EQ(wor.front(), 2.0);
  EXPECT_EQ(wor.back(), 256.0);
  const std::vector<double> poisson = DefaultOrders(Sampler::kPoisson);
  // Opacus DEFAULT_ALPHAS: 99 fractional + 52 integer orders (anchors-mission
  // §3.4 says "150", a miscount of the same list).
  ASSERT_EQ(poisson.size(), 151u);
  EXPECT_NEAR(poisson.front(), 1.1, 1e-12);
  EXPECT_EQ(poisson.back(), 63.0);
}

// TF Privacy rdp_accountant_test and dp_accounting: special cases.
TEST(PoissonRdpTest, SpecialCases) {
  EXPECT_EQ(*PoissonSubsampledGaussianRdp(0.0, 10.0, 20.0), 0.0);
  EXPECT_DOUBLE_EQ(*PoissonSubsampledGaussianRdp(1.0, 10.0, 20.0), 0.1);
  EXPECT_DOUBLE_EQ(*PoissonSubsampledGaussianRdp(1.0, 2.71828, 3.14159),
                   3.14159 / (2 * 2.71828 * 2.71828));
  EXPECT_EQ(*PoissonSubsampledGaussianRdp(0.5, 0.0, 2.0), kInf);
  EXPECT_EQ(*PoissonSubsampledGaussianRdp(0.5, 1.0, kInf), kInf);
  EXPECT_FALSE(PoissonSubsampledGaussianRdp(1.5, 1.0, 2.0).ok());
  EXPECT_FALSE(PoissonSubsampledGaussianRdp(0.5, -1.0, 2.0).ok());
  EXPECT_FALSE(PoissonSubsampledGaussianRdp(0.5, 1.0, 1.0).ok());
}

// anchors-mission §3.5, "Single-step RDP values" (Opacus signed variant).
TEST(PoissonRdpTest, SingleStepReferenceValues) {
  struct Row {
    double q, sigma, order, expected;
  };
  for (const Row& row : std::vector<Row>{{0.01, 1.1, 2, 1.2851008160514807e-4},
                                         {0.01, 1.1, 2.5, 1.6207740933199663e-4},
                                         {0.01, 1.1, 32, 8.469416433675926},
                                         {0.01, 1.1, 1.5, 9.554528557684942e-5},
                                         {0.1, 1.0, 8, 1.3783614113481268},
                                         {0.1, 1.0, 8.5, 1.6462297571072666},
                                         {1.0, 2.0, 10, 1.25},
                                         {0.5, 0.8, 3.3, 1.6284508220870981}}) {
    EXPECT_NEAR(*PoissonSubsampledGaussianRdp(row.q, row.sigma, row.order), row.expected,
                1e-9 * row.expected)
        << "q=" << row.q << " sigma=" << row.sigma << " order=" << row.order;
  }
}

// TF Privacy test_compute_rdp_scalar / test_compute_rdp_sequence.
TEST(PoissonRdpTest, ComposedReferenceValues) {
  StepMechanism scalar{{2.0}, 0.1, Sampler::kPoisson};
  EXPECT_NEAR((*ComposedRdp(scalar, 10, {5.0}))[0], 0.0773696849, 1e-9);

  StepMechanism mech{{2.5}, 0.01, Sampler::kPoisson};
  const std::vector<double> rdp = *ComposedRdp(mech, 50, {1.5, 2.5, 5, 50, 100, kInf});
  const std::vector<double> expected = {0.00065, 0.001085, 0.00218075, 0.023846, 167.416307};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(rdp[i], expected[i], 1e-5) << i;
  EXPECT_EQ(rdp[5], kInf);
  // The signed (Opacus / TF) series at fractional orders, [computed] in §3.2.
  EXPECT_NEAR(rdp[0], 6.50071e-4, 1e-9);
  EXPECT_NEAR(rdp[1], 1.085418e-3, 1e-9);
}

// Independent check of log A_α: E_{x~N(0,σ²)}[(1 - q + q·e^{(2x-1)/(2σ²)})^α]
// by quadrature, at fractional and integer orders.
TEST(PoissonRdpTest, MatchesNumericalIntegration) {
  struct Row {
    double q, sigma, order;
  };
  for (const Row& row : std::vector<Row>{{0.01, 1.1, 1.5}, {0.05, 0.9, 3.7}, {0.2, 2.0, 6.0}}) {
    const double s2 = row.sigma * row.sigma;
    const double h = 1e-3 * row.sigma;
    double integral = 0.0;
    for (double x = -40 * row.sigma; x <= 40 * row.sigma; x += h) {
      const double density = std::exp(-x * x / (2 * s2)) / std::sqrt(2 * M_PI * s2);
      const double ratio = 1 - row.q + row.q * std::exp((2 * x - 1) / (2 * s2));
      integral += density * std::pow(ratio, row.order) * h;
    }
    const double expected = std::log(integral) / (row.order - 1);
    EXPECT_NEAR(*PoissonSubsampledGaussianRdp(row.q, row.sigma, row.order), expected,
                1e-6 * expected)
        << row.order;
  }
}

// Wang-Balle-Kasiviswanathan Thm 9 at α = 2 has the closed form
// log(1 + q² min{4(e^{1/z²} - 1), 2e^{1/z²}}).
TEST(WorRdpTest, OrderTwoClosedForm) {
  for (double z : {0.5, 0.8, 2.0}) {
    for (double q : {1e-3, 0.05, 0.5}) {
      const double e = std::exp(1.0 / (z * z));
      const double expected =
          std::min(std::log1p(q * q * std::min(4 * (e - 1), 2 * e)), 2.0 / (2 * z * z));
      EXPECT_NEAR(*WorSubsampledGaussianRdp(q, z, 2.0), expected, 1e-12 * expected);
    }
  }
}

TEST(WorRdpTest, OrderThreeClosedForm) {
  const double q = 0.01;
  const double z = 0.9;
  const double eps = 1.0 / (2 * z * z);  // ε(j) = j·eps
  const double expected =
      std::log1p(q * q * 3 * std::min(4 * std::expm1(2 * eps), 2 * std::exp(2 * eps)) +
                 2 * q * q * q * std::exp(2 * 3 * eps)) /
      2.0;
  EXPECT_NEAR(*WorSubsampledGaussianRdp(q, z, 3.0), expected, 1e-12 * expected);
}

TEST(WorRdpTest, NeverWorseThanUnsampledAndMonotone) {
  const double z = 1.0;
  double previous = 0.0;
  for (int a = 2; a <= 256; a += 7) {
    const double r = *WorSubsampledGaussianRdp(0.3, z, a);
    EXPECT_LE(r, GaussianRdp(z, a) * (1 + 1e-12)) << a;
    EXPECT_GE(r, previous) << a;  // RDP is non-decreasing in the order
    previous = r;
  }
  EXPECT_DOUBLE_EQ(*WorSubsampledGaussianRdp(1.0, 1.3, 7.0), GaussianRdp(1.3, 7.0));
  EXPECT_EQ(*WorSubsampledGaussianRdp(0.0, 1.3, 7.0), 0.0);
}

TEST(WorRdpTest, FractionalOrderInterpolatesTheCumulant) {
  const double q = 0.01, z = 1.0;
  const double c3 = 2 * *WorSubsampledGaussianRdp(q, z, 3.0);
  const double c4 = 3 * *WorSubsampledGaussianRdp(q, z, 4.0);
  EXPECT_NEAR(*WorSubsampledGaussianRdp(q, z, 3.25), (0.75 * c3 + 0.25 * c4) / 2.25, 1e-15);
  EXPECT_DOUBLE_EQ(*WorSubsampledGaussianRdp(q, z, 1.5), *WorSubsampledGaussianRdp(q, z, 2.0));
}

TEST(RdpTest, ComposedRdpScalesWithStepsAndRejectsBadInput) {
  StepMechanism mech{{1.0}, 0.01, Sampler::kWithoutReplacement};
  const std::vector<double> one = *ComposedRdp(mech, 1, {2.0, 10.0});
  const std::vector<double> many = *ComposedRdp(mech, 1000, {2.0, 10.0});
  EXPECT_NEAR(many[0], 1000 * one[0], 1e-12 * many[0]);
  EXPECT_NEAR(many[1], 1000 * one[1], 1e-12 * many[1]);
  EXPECT_FALSE(ComposedRdp(mech, -1, {2.0}).ok());
  mech.sample_rate = 1.5;
  EXPECT_FALSE(ComposedRdp(mech, 1, {2.0}).ok());
}

TEST(RdpTest, ParseSampler) {
  EXPECT_EQ(*ParseSampler("wor"), Sampler::kWithoutReplacement);
  EXPECT_EQ(*ParseSampler("poisson"), Sampler::kPoisson);
  EXPECT_FALSE(ParseSampler("bernoulli").ok());
}

// log of (1 - q)·N(x; 0, σ²) + q·N(x; m, σ²): a Poisson-sampled sum of one user, the
// others' sum at 0.
double LogSampledDensity(double x, double q, double m, double sigma) {
  const double absent = std::log1p(-q) - x * x / (2 * sigma * sigma);
  const double present = std::log(q) - (x - m) * (x - m) / (2 * sigma * sigma);
  return std::max(absent, present) + std::log1p(std::exp(-std::abs(absent - present))) -
         std::log(sigma * std::sqrt(2 * M_PI));
}

// D_α(P || Q) of two one-dimensional densities given as logs, by the trapezoid rule.
double RenyiDivergence(const std::function<double(double)>& log_p,
                       const std::function<double(double)>& log_q, double order, double sigma) {
  const double lo = -12 * sigma - 3, hi = 12 * sigma + 3;
  constexpr int kSteps = 20000;
  const double h = (hi - lo) / kSteps;
  std::vector<double> terms;
  for (int i = 0; i <= kSteps; ++i) {
    const double x = lo + i * h;
    terms.push_back(order * log_p(x) + (1 - order) * log_q(x) + std::log(h));
  }
  const double most = *std::max_element(terms.begin(), terms.end());
  double sum = 0;
  for (double term : terms) sum += std::exp(term - most);
  return (most + std::log(sum)) / (order - 1);
}

TEST(RdpTest, ThePoissonBoundAtSensitivityTwoCCoversSwappingOneUser) {
  // dpfedavg: one user swapped for another (each clipped to C = 1) moves the party's
  // sum from m to m' with |m|, |m'| <= 1, the user in it with probability q; the noise is
  // z·2C. The accountant charges the add/remove pair at sensitivity 2C, multiplier z.
  for (double q : {0.01, 0.1, 0.5}) {
    for (double z : {0.6, 1.0, 2.0}) {
      const double sigma = 2 * z;
      for (double order : {2.0, 8.0, 32.0}) {
        const double charged = *PoissonSubsampledGaussianRdp(q, z, order);
        for (auto [m, swapped] : {std::pair{1.0, -1.0}, {1.0, 0.0}, {0.5, -1.0}}) {
          auto p = [&](double x) { return LogSampledDensity(x, q, m, sigma); };
          auto r = [&](double x) { return LogSampledDensity(x, q, swapped, sigma); };
          const double swap =
              std::max(RenyiDivergence(p, r, order, sigma), RenyiDivergence(r, p, order, sigma));
          EXPECT_LE(swap, charged)
              << "q " << q << " z " << z << " order " << order << " m " << m << " m' " << swapped;
        }
      }
    }
  }
}

}  // namespace
}  // namespace vfsynth::privacy
