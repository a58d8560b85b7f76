#ifndef VFSYNTH_COMMON_SECURE_DISCRETE_GAUSSIAN_H_
#define VFSYNTH_COMMON_SECURE_DISCRETE_GAUSSIAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/random/secure_random.h"

namespace vfsynth::secure {

// Largest sigma accepted: keeps the Laplace scale an exact integer far inside uint64.
inline constexpr double kMaxDiscreteGaussianSigma = 16777216.0;  // 2^24

// Canonne, Kamath, Steinke (2020), "The Discrete Gaussian for Differential Privacy".
// Algorithm 1: one draw of Bernoulli(exp(-gamma)), gamma >= 0.
bool BernoulliExpMinus(double gamma, SecureRandom& rng);
// Algorithm 2 with s = 1: P[X = x] proportional to exp(-|x| / t), t >= 1.
int64_t DiscreteLaplace(uint64_t t, SecureRandom& rng);
// Algorithm 3: P[X = x] proportional to exp(-x^2 / (2 sigma^2)). sigma = 0 returns 0
// (noise off, for tests); refuses sigma < 0, NaN or sigma > 2^24.
absl::StatusOr<int64_t> SampleDiscreteGaussian(double sigma, SecureRandom& rng);

}  // namespace vfsynth::secure

#endif  // VFSYNTH_COMMON_SECURE_DISCRETE_GAUSSIAN_H_
