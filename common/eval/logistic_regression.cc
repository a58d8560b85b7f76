#include "common/eval/logistic_regression.h"

#include <algorithm>
#include <cmath>

namespace vfsynth {
namespace {

// Softmax of x·W^T + b into `proba` (k entries).
void RowProba(const float* x, int cols, const std::vector<double>& w, int k, double* proba) {
  double max_logit = -1e300;
  for (int c = 0; c < k; ++c) {
    const double* wc = w.data() + c * (cols + 1);
    double logit = wc[cols];
    for (int j = 0; j < cols; ++j) logit += wc[j] * x[j];
    proba[c] = logit;
    max_logit = std::max(max_logit, logit);
  }
  double sum = 0;
  for (int c = 0; c < k; ++c) sum += proba[c] = std::exp(proba[c] - max_logit);
  for (int c = 0; c < k; ++c) proba[c] /= sum;
}

}  // namespace

absl::Status LogisticRegression::Fit(const FeatureMatrix& x, const std::vector<int>& y,
                                     int num_classes) {
  if (x.rows == 0 || num_classes < 2 || static_cast<int64_t>(y.size()) != x.rows) {
    return absl::InvalidArgumentError("logistic regression: need rows, labels and >= 2 classes");
  }
  num_classes_ = num_classes;
  cols_ = x.cols;
  const int k = num_classes, stride = cols_ + 1;
  weights_.assign(static_cast<size_t>(k) * stride, 0.0);
  std::vector<double> grad(weights_.size()), m(weights_.size(), 0.0), v(weights_.size(), 0.0);
  std::vector<double> proba(k);
  const double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  for (int it = 1; it <= options_.iterations; ++it) {
    std::fill(grad.begin(), grad.end(), 0.0);
    for (int64_t r = 0; r < x.rows; ++r) {
      const float* row = x.row(r);
      RowProba(row, cols_, weights_, k, proba.data());
      for (int c = 0; c < k; ++c) {
        const double err = proba[c] - (y[r] == c ? 1.0 : 0.0);
        if (err == 0) continue;
        double* gc = grad.data() + c * stride;
        for (int j = 0; j < cols_; ++j) gc[j] += err * row[j];
        gc[cols_] += err;
      }
    }
    for (size_t i = 0; i < grad.size(); ++i) {
      grad[i] /= static_cast<double>(x.rows);
      if (i % stride != static_cast<size_t>(cols_)) grad[i] += options_.l2 * weights_[i];
      m[i] = beta1 * m[i] + (1 - beta1) * grad[i];
      v[i] = beta2 * v[i] + (1 - beta2) * grad[i] * grad[i];
      const double mhat = m[i] / (1 - std::pow(beta1, it));
      const double vhat = v[i] / (1 - std::pow(beta2, it));
      weights_[i] -= options_.learning_rate * mhat / (std::sqrt(vhat) + eps);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> LogisticRegression::PredictProba(const FeatureMatrix& x) const {
  if (weights_.empty())
    return absl::FailedPreconditionError("logistic regression: PredictProba before Fit");
  if (x.cols != cols_)
    return absl::InvalidArgumentError("logistic regression: feature count differs");
  std::vector<double> out(static_cast<size_t>(x.rows) * num_classes_);
  for (int64_t r = 0; r < x.rows; ++r) {
    RowProba(x.row(r), cols_, weights_, num_classes_, out.data() + r * num_classes_);
  }
  return out;
}

}  // namespace vfsynth
