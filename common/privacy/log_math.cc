#include "common/privacy/log_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vfsynth::privacy {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

double LogAdd(double a, double b) {
  const double hi = std::max(a, b);
  const double lo = std::min(a, b);
  if (hi == -kInf) return -kInf;
  if (hi == kInf) return kInf;
  return hi + std::log1p(std::exp(lo - hi));
}

double LogSub(double a, double b) {
  if (b == -kInf) return a;
  if (a <= b) return -kInf;
  return a + std::log(-std::expm1(b - a));
}

double LogSumExp(const std::vector<double>& terms) {
  if (terms.empty()) return -kInf;
  const auto max_it = std::max_element(terms.begin(), terms.end());
  const double hi = *max_it;
  if (hi == -kInf || hi == kInf) return hi;
  // log1p of the rest keeps full relative precision when the largest term
  // dominates (e.g. log(1 + tiny) in the subsampled bounds).
  double rest = 0.0;
  for (auto it = terms.begin(); it != terms.end(); ++it) {
    if (it != max_it) rest += std::exp(*it - hi);
  }
  return hi + std::log1p(rest);
}

double LogGamma(double x) {
  int sign = 0;
  return lgamma_r(x, &sign);
}

double LogBinomial(int n, int k) {
  return LogGamma(n + 1.0) - LogGamma(k + 1.0) - LogGamma(n - k + 1.0);
}

double LogExpm1(double x) {
  // For x > 40, e^x - 1 == e^x to double precision.
  if (x > 40.0) return x + std::log1p(-std::exp(-x));
  return std::log(std::expm1(x));
}

double LogErfc(double x) {
  if (x < 25.0) return std::log(std::erfc(x));
  // erfc(x) = e^{-x^2} / (x sqrt(pi)) * (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + 105/(16x^8) ...);
  // at x >= 25 the truncation error is below 1e-13.
  const double inv2 = 1.0 / (x * x);
  const double series = inv2 * (-0.5 + inv2 * (0.75 + inv2 * (-1.875 + inv2 * 6.5625)));
  return -x * x - std::log(x) - 0.5 * std::log(M_PI) + std::log1p(series);
}

}  // namespace vfsynth::privacy
