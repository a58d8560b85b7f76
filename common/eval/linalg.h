#ifndef VFSYNTH_COMMON_EVAL_LINALG_H_
#define VFSYNTH_COMMON_EVAL_LINALG_H_

#include <vector>

namespace vfsynth {

// Dense row-major square matrices as std::vector<double> of size n*n; enough for
// the covariance work of the Fréchet distance without a linear-algebra dependency.

// Eigen-decomposition of a symmetric matrix by cyclic Jacobi rotations:
// a = V diag(values) V^T, eigenvectors in the columns of `vectors`.
struct SymmetricEigen {
  std::vector<double> values;
  std::vector<double> vectors;
};
SymmetricEigen JacobiEigen(std::vector<double> a, int n, int max_sweeps = 100);

// Square root of a symmetric positive semi-definite matrix (negative eigenvalues
// from round-off are clamped to 0).
std::vector<double> PsdSqrt(const std::vector<double>& a, int n);

std::vector<double> MatMul(const std::vector<double>& a, const std::vector<double>& b, int n);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_LINALG_H_
