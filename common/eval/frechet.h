#ifndef VFSYNTH_COMMON_EVAL_FRECHET_H_
#define VFSYNTH_COMMON_EVAL_FRECHET_H_

#include <cstdint>
#include <vector>

namespace vfsynth {

// Fréchet distance between Gaussians fitted to two row-major samples of `width`
// columns (VFLGAN eq. 23; ddof = 1 covariances):
//   ||mu_r - mu_g||^2 + Tr(S_r + S_g - 2 (S_r S_g)^{1/2}).
// Tr((S_r S_g)^{1/2}) is taken as Tr((S_r^{1/2} S_g S_r^{1/2})^{1/2}), which is equal
// and symmetric, so the Jacobi solver suffices.
double FrechetDistance(const std::vector<float>& real, int64_t real_rows,
                       const std::vector<float>& synthetic, int64_t synthetic_rows, int width);

struct MeanCovariance {
  std::vector<double> mean;
  std::vector<double> covariance;  // width x width, row-major
};
MeanCovariance ComputeMeanCovariance(const std::vector<float>& values, int64_t rows, int width);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_FRECHET_H_
