#ifndef VFSYNTH_COMMON_RANDOM_RANDOM_TENSORS_H_
#define VFSYNTH_COMMON_RANDOM_RANDOM_TENSORS_H_

#include <torch/torch.h>

#include <cstdint>

#include "common/random/secure_random.h"

namespace vfsynth {

// Tensors drawn from a SecureRandom stream (CPU). Every value is computed in double
// and only then cast to `dtype`, so noise keeps its double-precision tails. Uniforms
// carry 53 random bits; Gaussians are Box-Muller on pairs of them (tails beyond 8.5σ).

// N(0, stddev²) entries.
torch::Tensor GaussianTensor(SecureRandom& rng, at::IntArrayRef sizes, double stddev,
                             torch::ScalarType dtype = torch::kDouble);
// Uniform entries in (0, 1).
torch::Tensor UniformTensor(SecureRandom& rng, at::IntArrayRef sizes,
                            torch::ScalarType dtype = torch::kDouble);
// `count` independent uniform integers in [low, high) (int64); high > low.
torch::Tensor UniformIntegers(SecureRandom& rng, int64_t low, int64_t high, int64_t count);
// A uniformly random permutation of 0 .. n - 1 (Fisher-Yates), int64.
torch::Tensor RandomPermutation(SecureRandom& rng, int64_t n);
// `batch` distinct indices of 0 .. rows - 1, uniformly (a partial Fisher-Yates that
// touches only the positions it draws), int64. Requires 0 <= batch <= rows.
torch::Tensor SampleWithoutReplacement(int64_t rows, int64_t batch, SecureRandom& rng);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_RANDOM_RANDOM_TENSORS_H_
