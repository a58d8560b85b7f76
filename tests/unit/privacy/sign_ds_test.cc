// SignDS: the paper's selection probability, the top-k sets of hand-made updates, the
// sampled distribution of reports, and the ε-LDP ratio between two updates.
#include "common/privacy/sign_ds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace vfsynth {
namespace {

// Pr[(j, s) | update]: the coin s, then p/k inside the top-k set of s, (1 − p)/(d − k) outside.
double ReportProbability(const std::vector<float>& update, int64_t k, double epsilon, int64_t j,
                         bool positive) {
  const int64_t d = static_cast<int64_t>(update.size());
  const double p = SignDsTopProbability(d, k, epsilon);
  const std::vector<int64_t> top = SignDsTopSet(update, k, positive);
  const bool in_top = std::find(top.begin(), top.end(), j) != top.end();
  return 0.5 * (in_top ? p / k : (1 - p) / (d - k));
}

TEST(SignDsTest, TopProbabilityIsThePapersFormula) {
  for (auto [d, k, epsilon] : {std::tuple<int64_t, int64_t, double>{10, 1, 1.0},
                               {16060, 803, 8.0},
                               {16060, 4015, 0.5},
                               {101, 25, 2.0},
                               {2, 1, 4.0}}) {
    const double paper = std::exp(epsilon) * k / (d - k + std::exp(epsilon) * k);
    const double p = SignDsTopProbability(d, k, epsilon);
    EXPECT_NEAR(p, paper, 1e-12 * paper) << d << " " << k << " " << epsilon;
    // An index in the top-k set is exactly e^ε times as likely as one outside it.
    EXPECT_NEAR((p / k) / ((1 - p) / (d - k)), std::exp(epsilon), 1e-9 * std::exp(epsilon));
  }
  EXPECT_EQ(SignDsTopK(16060, 0.05), 803);
  EXPECT_EQ(SignDsTopK(10, 0.0), 1);
  EXPECT_EQ(SignDsTopK(10, 1.0), 9);
}

TEST(SignDsTest, TopSetHoldsTheLargestOrSmallestSignedValues) {
  const std::vector<float> update = {0.5f, -2.0f, 3.0f, 0.0f, -1.0f, 3.0f};
  EXPECT_EQ(SignDsTopSet(update, 2, /*positive=*/true), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(SignDsTopSet(update, 2, /*positive=*/false), (std::vector<int64_t>{1, 4}));
  // Signed, not absolute: -2 is not among the three largest.
  EXPECT_EQ(SignDsTopSet(update, 3, /*positive=*/true), (std::vector<int64_t>{0, 2, 5}));
  // Ties go to the lower index.
  EXPECT_EQ(SignDsTopSet({1.0f, 1.0f, 1.0f}, 1, true), (std::vector<int64_t>{0}));
  EXPECT_EQ(SignDsTopSet({1.0f, 1.0f, 1.0f}, 2, false), (std::vector<int64_t>{0, 1}));
}

TEST(SignDsTest, ReportsFollowTheExactDistribution) {
  const std::vector<float> update = {0.1f, -0.4f, 0.9f, 0.0f, 0.3f, -0.2f, 0.7f, -0.8f};
  constexpr int64_t kTop = 2;
  constexpr double kEpsilon = 1.0;
  constexpr int kDraws = 200000;
  SecureRandom random = SecureRandom::Derived("sign-ds", "coins", 1);
  std::map<std::pair<int64_t, bool>, int> counts;
  for (int i = 0; i < kDraws; ++i) {
    auto report = SignDs(update, kTop, kEpsilon, random);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_GE(report->index, 0);
    ASSERT_LT(report->index, static_cast<int64_t>(update.size()));
    ++counts[{report->index, report->positive}];
  }
  for (int64_t j = 0; j < static_cast<int64_t>(update.size()); ++j) {
    for (bool positive : {true, false}) {
      const double expected = ReportProbability(update, kTop, kEpsilon, j, positive);
      const double sigma = std::sqrt(expected * (1 - expected) / kDraws);
      const double observed = counts[std::make_pair(j, positive)] / static_cast<double>(kDraws);
      EXPECT_NEAR(observed, expected, 5 * sigma) << "j " << j << " s " << positive;
    }
  }
}

TEST(SignDsTest, NoTwoUpdatesAreMoreThanEpsilonApart) {
  // Opposite updates: every top-k set of one is outside the other's, the worst case.
  const std::vector<float> update = {5.0f, 4.0f, 0.0f, 0.0f, 0.0f, 0.0f, -4.0f, -5.0f, 0.1f, -0.1f};
  std::vector<float> opposite(update.size());
  for (size_t i = 0; i < update.size(); ++i) opposite[i] = -update[i];
  for (double epsilon : {0.5, 2.0, 8.0}) {
    double worst = 0;
    for (int64_t j = 0; j < static_cast<int64_t>(update.size()); ++j) {
      for (bool positive : {true, false}) {
        const double a = ReportProbability(update, 2, epsilon, j, positive);
        const double b = ReportProbability(opposite, 2, epsilon, j, positive);
        worst = std::max({worst, a / b, b / a});
      }
    }
    EXPECT_NEAR(worst, std::exp(epsilon), 1e-9 * std::exp(epsilon)) << epsilon;
  }
  // Sampled: index 0 under s = +1 is e^ε times likelier for `update` than for `opposite`.
  constexpr double kEpsilon = 1.0;
  constexpr int kDraws = 200000;
  SecureRandom random = SecureRandom::Derived("sign-ds", "coins", 2);
  int for_update = 0, for_opposite = 0;
  for (int i = 0; i < kDraws; ++i) {
    const SignDsReport a = *SignDs(update, 2, kEpsilon, random);
    const SignDsReport b = *SignDs(opposite, 2, kEpsilon, random);
    for_update += a.index == 0 && a.positive;
    for_opposite += b.index == 0 && b.positive;
  }
  EXPECT_NEAR(static_cast<double>(for_update) / for_opposite, std::exp(kEpsilon), 0.25);
}

TEST(SignDsTest, BadInputIsRefused) {
  SecureRandom random = SecureRandom::Derived("sign-ds", "coins", 3);
  const std::vector<float> update = {1.0f, 2.0f, 3.0f};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(SignDs(std::vector<float>{1.0f}, 1, 1.0, random).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SignDs(update, 0, 1.0, random).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SignDs(update, 3, 1.0, random).status().code(), absl::StatusCode::kInvalidArgument);
  for (double epsilon : {0.0, -1.0, nan, inf}) {
    EXPECT_EQ(SignDs(update, 1, epsilon, random).status().code(),
              absl::StatusCode::kInvalidArgument)
        << epsilon;
  }
}

// An error would tell the curator, outside the LDP, that this update was not finite; the
// report is instead uniform over every coordinate (not the zero update's tie-broken top).
TEST(SignDsTest, ANonFiniteUpdateReportsAUniformIndex) {
  SecureRandom random = SecureRandom::Derived("sign-ds", "coins", 4);
  constexpr int kDraws = 40000;
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const std::vector<float> broken = {1.0f, bad, 3.0f, -2.0f};
    std::map<std::pair<int64_t, bool>, int> counts;
    for (int i = 0; i < kDraws; ++i) {
      auto report = SignDs(broken, 1, 8.0, random);
      ASSERT_TRUE(report.ok()) << report.status();
      ++counts[{report->index, report->positive}];
    }
    const double expected = 1.0 / 8;
    const double sigma = std::sqrt(expected * (1 - expected) / kDraws);
    for (int64_t j = 0; j < 4; ++j) {
      for (bool positive : {true, false}) {
        EXPECT_NEAR(counts[std::make_pair(j, positive)] / static_cast<double>(kDraws), expected,
                    5 * sigma)
            << "j " << j << " s " << positive;
      }
    }
  }
}

}  // namespace
}  // namespace vfsynth
