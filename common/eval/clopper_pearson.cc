#include "common/eval/clopper_pearson.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/privacy/log_math.h"

namespace vfsynth {
namespace {

// Continued fraction of I_x(a, b) (modified Lentz), valid for x < (a+1)/(a+b+2).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double f = d;
  for (int m = 1; m <= 1000; ++m) {
    const double m2 = 2.0 * m;
    double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    for (int step = 0; step < 2; ++step) {
      d = 1 + num * d;
      if (std::abs(d) < kTiny) d = kTiny;
      c = 1 + num / c;
      if (std::abs(c) < kTiny) c = kTiny;
      d = 1 / d;
      const double delta = c * d;
      f *= delta;
      if (step == 1 && std::abs(delta - 1) < 1e-15) return f;
      num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    }
  }
  return f;
}

}  // namespace

double RegularizedIncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = privacy::LogGamma(a + b) - privacy::LogGamma(a) - privacy::LogGamma(b) +
                           a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * BetaContinuedFraction(a, b, x) / a;
  return 1 - std::exp(log_front) * BetaContinuedFraction(b, a, 1 - x) / b;
}

double BetaQuantile(double p, double a, double b) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 200 && hi - lo > 1e-16; ++i) {
    const double mid = 0.5 * (lo + hi);
    (RegularizedIncompleteBeta(a, b, mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

Interval ClopperPearson(int64_t successes, int64_t trials, double alpha) {
  const double x = static_cast<double>(successes), n = static_cast<double>(trials);
  if (trials <= 0) return {0, 1};
  if (successes <= 0) return {0, 1 - std::pow(alpha / 2, 1 / n)};
  if (successes >= trials) return {std::pow(alpha / 2, 1 / n), 1};
  return {BetaQuantile(alpha / 2, x, n - x + 1), BetaQuantile(1 - alpha / 2, x + 1, n - x)};
}

EpsilonBound EmpiricalEpsilon(int64_t false_negatives, int64_t positives, int64_t false_positives,
                              int64_t negatives, double delta, double alpha) {
  EpsilonBound out;
  out.fnr_upper = ClopperPearson(false_negatives, positives, alpha).upper;
  out.fpr_upper = ClopperPearson(false_positives, negatives, alpha).upper;
  const auto bound = [delta](double miss, double other) {
    return miss < 1 - delta ? std::log((1 - delta - miss) / other) : 0.0;
  };
  out.lower_bound =
      std::max({0.0, bound(out.fnr_upper, out.fpr_upper), bound(out.fpr_upper, out.fnr_upper)});
  const double fnr = positives > 0 ? static_cast<double>(false_negatives) / positives : 0;
  const double fpr = negatives > 0 ? static_cast<double>(false_positives) / negatives : 0;
  if (fnr == 0 || fpr == 0) {
    out.point = std::numeric_limits<double>::infinity();
  } else {
    out.point = std::log(std::max((1 - delta - fnr) / fpr, (1 - delta - fpr) / fnr));
  }
  return out;
}

double AttainableEpsilonBound(int64_t positives, int64_t negatives, double delta, double alpha) {
  return EmpiricalEpsilon(0, positives, 0, negatives, delta, alpha).lower_bound;
}

}  // namespace vfsynth
