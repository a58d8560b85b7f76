#ifndef VFSYNTH_COMMON_EVAL_LOGISTIC_REGRESSION_H_
#define VFSYNTH_COMMON_EVAL_LOGISTIC_REGRESSION_H_

#include <vector>

#include "common/eval/classifier.h"

namespace vfsynth {

struct LogisticRegressionOptions {
  int iterations = 300;  // full-batch Adam steps
  double learning_rate = 0.05;
  double l2 = 1e-4;  // on the weights, not the bias
};

// Multinomial (softmax) logistic regression trained full-batch with Adam; a
// dependency-free stand-in for scikit-learn's LogisticRegression.
class LogisticRegression : public Classifier {
 public:
  explicit LogisticRegression(LogisticRegressionOptions options = {}) : options_(options) {}

  absl::Status Fit(const FeatureMatrix& x, const std::vector<int>& y, int num_classes) override;
  absl::StatusOr<std::vector<double>> PredictProba(const FeatureMatrix& x) const override;
  int num_classes() const override { return num_classes_; }

 private:
  LogisticRegressionOptions options_;
  int num_classes_ = 0;
  int cols_ = 0;
  std::vector<double> weights_;  // num_classes x (cols + 1), last entry the bias
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_LOGISTIC_REGRESSION_H_
