#include "common/eval/classifier.h"

#include "common/base/status_macros.h"

namespace vfsynth {

absl::StatusOr<std::vector<int>> Classifier::Predict(const FeatureMatrix& x) const {
  ASSIGN_OR_RETURN(const std::vector<double> proba, PredictProba(x));
  const int k = num_classes();
  std::vector<int> out(x.rows, 0);
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int c = 1; c < k; ++c) {
      if (proba[r * k + c] > proba[r * k + out[r]]) out[r] = c;
    }
  }
  return out;
}

}  // namespace vfsynth
