#ifndef VFSYNTH_COMMON_EVAL_CLASSIFIER_H_
#define VFSYNTH_COMMON_EVAL_CLASSIFIER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vfsynth {

// Row-major float feature matrix.
struct FeatureMatrix {
  int64_t rows = 0;
  int cols = 0;
  std::vector<float> values;

  const float* row(int64_t r) const { return values.data() + r * cols; }
};

// A multi-class classifier over FeatureMatrix rows with labels 0..num_classes-1.
class Classifier {
 public:
  virtual ~Classifier() = default;
  virtual absl::Status Fit(const FeatureMatrix& x, const std::vector<int>& y, int num_classes) = 0;
  // rows x num_classes class probabilities, row-major.
  virtual absl::StatusOr<std::vector<double>> PredictProba(const FeatureMatrix& x) const = 0;
  virtual int num_classes() const = 0;

  // Arg-max of PredictProba (ties to the lower class).
  absl::StatusOr<std::vector<int>> Predict(const FeatureMatrix& x) const;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_CLASSIFIER_H_
