#include "common/eval/frechet.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/eval/linalg.h"

namespace vfsynth {

MeanCovariance ComputeMeanCovariance(const std::vector<float>& values, int64_t rows, int width) {
  MeanCovariance mc;
  mc.mean.assign(width, 0.0);
  mc.covariance.assign(static_cast<size_t>(width) * width, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < width; ++j) mc.mean[j] += values[r * width + j];
  }
  for (double& m : mc.mean) m /= static_cast<double>(rows);
  std::vector<double> centred(width);
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < width; ++j) centred[j] = values[r * width + j] - mc.mean[j];
    for (int i = 0; i < width; ++i) {
      if (centred[i] == 0) continue;  // one-hot data is sparse
      for (int j = i; j < width; ++j) mc.covariance[i * width + j] += centred[i] * centred[j];
    }
  }
  const double denom = rows > 1 ? static_cast<double>(rows - 1) : 1.0;
  for (int i = 0; i < width; ++i) {
    for (int j = i; j < width; ++j) {
      mc.covariance[i * width + j] /= denom;
      mc.covariance[j * width + i] = mc.covariance[i * width + j];
    }
  }
  return mc;
}

double FrechetDistance(const std::vector<float>& real, int64_t real_rows,
                       const std::vector<float>& synthetic, int64_t synthetic_rows, int width) {
  if (real_rows < 2 || synthetic_rows < 2 || width <= 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  const MeanCovariance r = ComputeMeanCovariance(real, real_rows, width);
  const MeanCovariance g = ComputeMeanCovariance(synthetic, synthetic_rows, width);
  double fd = 0;
  for (int j = 0; j < width; ++j) fd += (r.mean[j] - g.mean[j]) * (r.mean[j] - g.mean[j]);
  for (int j = 0; j < width; ++j) fd += r.covariance[j * width + j] + g.covariance[j * width + j];
  const std::vector<double> root_r = PsdSqrt(r.covariance, width);
  std::vector<double> inner = MatMul(MatMul(root_r, g.covariance, width), root_r, width);
  for (int i = 0; i < width; ++i) {  // symmetrise away round-off before Jacobi
    for (int j = i + 1; j < width; ++j) {
      inner[i * width + j] = inner[j * width + i] =
          0.5 * (inner[i * width + j] + inner[j * width + i]);
    }
  }
  const SymmetricEigen eig = JacobiEigen(std::move(inner), width);
  double trace_root = 0;
  for (double v : eig.values) trace_root += std::sqrt(std::max(0.0, v));
  return std::max(0.0, fd - 2 * trace_root);
}

}  // namespace vfsynth
