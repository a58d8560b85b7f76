// The acceptance probabilities are evaluated in double precision instead of the paper's
// exact rational arithmetic: each Bernoulli is off by at most a few ulps of its
// probability, far below what the accounting's (epsilon, delta) can register, and the
// samples' support and symmetry stay exact.
#include "common/secure/discrete_gaussian.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace vfsynth::secure {
namespace {

bool Bernoulli(double p, SecureRandom& rng) { return rng.Uniform() < p; }

// Algorithm 1 for gamma in [0, 1]: the parity of the first K with Bernoulli(gamma / K) = 0.
bool BernoulliExpMinusAtMostOne(double gamma, SecureRandom& rng) {
  uint64_t k = 1;
  while (Bernoulli(gamma / static_cast<double>(k), rng)) ++k;
  return k % 2 == 1;
}

}  // namespace

bool BernoulliExpMinus(double gamma, SecureRandom& rng) {
  // exp(-gamma) = exp(-1)^floor(gamma) exp(-(gamma - floor(gamma))).
  const double whole = std::floor(gamma);
  for (double i = 0; i < whole; ++i) {
    if (!BernoulliExpMinusAtMostOne(1.0, rng)) return false;
  }
  return BernoulliExpMinusAtMostOne(gamma - whole, rng);
}

int64_t DiscreteLaplace(uint64_t t, SecureRandom& rng) {
  for (;;) {
    const uint64_t u = rng.UniformBelow(t);
    if (!BernoulliExpMinus(static_cast<double>(u) / static_cast<double>(t), rng)) continue;
    uint64_t v = 0;
    while (BernoulliExpMinusAtMostOne(1.0, rng)) ++v;
    const int64_t y = static_cast<int64_t>(u + t * v);  // s = 1: Y = X
    const bool negative = rng.NextUint64() & 1;
    if (negative && y == 0) continue;  // otherwise 0 would be drawn twice as often
    return negative ? -y : y;
  }
}

absl::StatusOr<int64_t> SampleDiscreteGaussian(double sigma, SecureRandom& rng) {
  if (std::isnan(sigma) || sigma < 0 || sigma > kMaxDiscreteGaussianSigma) {
    return absl::InvalidArgumentError(absl::StrCat(
        "discrete Gaussian sigma ", sigma, " outside [0, ", kMaxDiscreteGaussianSigma, "]"));
  }
  if (sigma == 0) return 0;
  const uint64_t t = static_cast<uint64_t>(std::floor(sigma)) + 1;
  const double variance = sigma * sigma;
  for (;;) {
    const int64_t y = DiscreteLaplace(t, rng);
    const double d = std::abs(static_cast<double>(y)) - variance / static_cast<double>(t);
    if (BernoulliExpMinus(d * d / (2 * variance), rng)) return y;
  }
}

}  // namespace vfsynth::secure
