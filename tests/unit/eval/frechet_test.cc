#include "common/eval/frechet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/eval/linalg.h"

namespace vfsynth {
namespace {

TEST(JacobiEigenTest, KnownSymmetricMatrix) {
  // [[2,1,0],[1,2,0],[0,0,5]] has eigenvalues 1, 3, 5.
  SymmetricEigen eig = JacobiEigen({2, 1, 0, 1, 2, 0, 0, 0, 5}, 3);
  std::sort(eig.values.begin(), eig.values.end());
  EXPECT_NEAR(eig.values[0], 1, 1e-12);
  EXPECT_NEAR(eig.values[1], 3, 1e-12);
  EXPECT_NEAR(eig.values[2], 5, 1e-12);
}

TEST(PsdSqrtTest, SquaresBackToTheMatrix) {
  const std::vector<double> a = {4, 1, 0.5, 1, 3, 0.2, 0.5, 0.2, 2};
  const std::vector<double> root = PsdSqrt(a, 3);
  const std::vector<double> square = MatMul(root, root, 3);
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(square[i], a[i], 1e-10) << i;
}

std::vector<float> Gaussian(int64_t rows, int width, double shift, double scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<float> out(rows * width);
  for (float& v : out) v = static_cast<float>(shift + scale * normal(rng));
  return out;
}

TEST(FrechetDistanceTest, IdenticalSamplesGiveZero) {
  const std::vector<float> x = Gaussian(500, 6, 0, 1, 1);
  EXPECT_NEAR(FrechetDistance(x, 500, x, 500, 6), 0.0, 1e-6);
}

TEST(FrechetDistanceTest, SameGaussianIsNearZeroAndShiftAddsSquaredNorm) {
  const int width = 4;
  const int64_t n = 20000;
  const std::vector<float> a = Gaussian(n, width, 0, 1, 1);
  const std::vector<float> b = Gaussian(n, width, 0, 1, 2);
  EXPECT_LT(FrechetDistance(a, n, b, n, width), 0.01);
  // Mean shift of 1 in every coordinate: ||mu||^2 = width.
  const std::vector<float> c = Gaussian(n, width, 1, 1, 3);
  EXPECT_NEAR(FrechetDistance(a, n, c, n, width), width, 0.05);
  // Scale 2: per coordinate 1 + 4 - 2*2 = 1.
  const std::vector<float> d = Gaussian(n, width, 0, 2, 4);
  EXPECT_NEAR(FrechetDistance(a, n, d, n, width), width * 1.0, 0.15);
}

TEST(FrechetDistanceTest, ExactOneDimensionalCase) {
  // Samples {-1, 1} (mean 0, ddof-1 variance 2) vs {2, 6} (mean 4, variance 8):
  // 16 + 2 + 8 - 2 * sqrt(16) = 18.
  EXPECT_NEAR(FrechetDistance({-1, 1}, 2, {2, 6}, 2, 1), 18.0, 1e-9);
}

}  // namespace
}  // namespace vfsynth
