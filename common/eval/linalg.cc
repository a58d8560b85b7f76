#include "common/eval/linalg.h"

#include <algorithm>
#include <cmath>

namespace vfsynth {

SymmetricEigen JacobiEigen(std::vector<double> a, int n, int max_sweeps) {
  std::vector<double> v(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) v[i * n + i] = 1.0;
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    double off = 0, diag = 0;
    for (int i = 0; i < n; ++i) {
      diag += a[i * n + i] * a[i * n + i];
      for (int j = i + 1; j < n; ++j) off += a[i * n + j] * a[i * n + j];
    }
    if (off <= 1e-30 * std::max(diag, 1e-300)) break;
    for (int p = 0; p < n; ++p) {
      for (int q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (std::abs(apq) < 1e-300) continue;
        // Rotation angle that zeroes a[p][q] (Golub & Van Loan, symmetric Schur).
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const double t =
            (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < n; ++k) {  // columns p, q
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {  // rows p, q
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (int k = 0; k < n; ++k) {
          const double vkp = v[k * n + p], vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  SymmetricEigen out;
  out.values.resize(n);
  for (int i = 0; i < n; ++i) out.values[i] = a[i * n + i];
  out.vectors = std::move(v);
  return out;
}

std::vector<double> PsdSqrt(const std::vector<double>& a, int n) {
  const SymmetricEigen eig = JacobiEigen(a, n);
  std::vector<double> out(static_cast<size_t>(n) * n, 0.0);
  for (int k = 0; k < n; ++k) {
    const double root = std::sqrt(std::max(0.0, eig.values[k]));
    if (root == 0) continue;
    for (int i = 0; i < n; ++i) {
      const double vik = eig.vectors[i * n + k] * root;
      for (int j = 0; j < n; ++j) out[i * n + j] += vik * eig.vectors[j * n + k];
    }
  }
  return out;
}

std::vector<double> MatMul(const std::vector<double>& a, const std::vector<double>& b, int n) {
  std::vector<double> out(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < n; ++k) {
      const double aik = a[i * n + k];
      for (int j = 0; j < n; ++j) out[i * n + j] += aik * b[k * n + j];
    }
  }
  return out;
}

}  // namespace vfsynth
