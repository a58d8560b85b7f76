#ifndef VFSYNTH_COMMON_EVAL_MLP_CLASSIFIER_H_
#define VFSYNTH_COMMON_EVAL_MLP_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "common/eval/classifier.h"

namespace vfsynth {

struct MlpOptions {
  int hidden = 100;  // scikit-learn MLPClassifier's default (100,), ReLU
  int epochs = 10;
  int batch_size = 256;
  double learning_rate = 1e-3;
  uint64_t seed = 0;
  int threads = 2;
};

// One-hidden-layer MLP trained with Adam on cross-entropy (LibTorch). The torch
// types stay in the .cc so users of this header compile without LibTorch.
class MlpClassifier : public Classifier {
 public:
  explicit MlpClassifier(MlpOptions options = {});
  ~MlpClassifier() override;

  absl::Status Fit(const FeatureMatrix& x, const std::vector<int>& y, int num_classes) override;
  absl::StatusOr<std::vector<double>> PredictProba(const FeatureMatrix& x) const override;
  int num_classes() const override { return num_classes_; }

 private:
  struct Net;
  MlpOptions options_;
  int num_classes_ = 0;
  std::unique_ptr<Net> net_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_MLP_CLASSIFIER_H_
