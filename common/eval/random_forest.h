#ifndef VFSYNTH_COMMON_EVAL_RANDOM_FOREST_H_
#define VFSYNTH_COMMON_EVAL_RANDOM_FOREST_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/eval/classifier.h"

namespace vfsynth {

struct RandomForestOptions {
  int trees = 100;
  int max_features = 0;       // features tried per split; 0 = round(sqrt(cols))
  int max_depth = 0;          // 0 = grow until pure (sklearn's default)
  int min_samples_split = 2;  // in bootstrap-weighted samples
  int max_bins = 64;          // split candidates per feature (quantile thresholds)
  bool bootstrap = true;
  int threads = 2;
  uint64_t seed = 0;
};

// Random forest of CART trees (Gini impurity, bootstrap, a random feature subset per
// split), as in scikit-learn's RandomForestClassifier. Splits are searched on
// per-feature histograms over at most `max_bins` quantile thresholds, which is exact
// for features with few distinct values (one-hot columns, small integers). Trees are
// built in parallel; results do not depend on the thread count.
class RandomForest : public Classifier {
 public:
  explicit RandomForest(RandomForestOptions options = {}) : options_(options) {}

  absl::Status Fit(const FeatureMatrix& x, const std::vector<int>& y, int num_classes) override;
  absl::StatusOr<std::vector<double>> PredictProba(const FeatureMatrix& x) const override;
  int num_classes() const override { return num_classes_; }

  int64_t total_nodes() const;

 private:
  struct Node {
    int feature = -1;     // -1: leaf
    float threshold = 0;  // go left when x < threshold
    int left = -1;
    int right = -1;
    int proba_offset = -1;  // leaves: index into Tree::proba
  };
  struct Tree {
    std::vector<Node> nodes;
    std::vector<float> proba;
  };

  Tree BuildTree(const std::vector<uint8_t>& binned, const std::vector<int>& y, int64_t rows,
                 uint64_t tree_seed) const;

  RandomForestOptions options_;
  int num_classes_ = 0;
  int cols_ = 0;
  std::vector<std::vector<float>> thresholds_;  // per feature, increasing
  std::vector<Tree> trees_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_RANDOM_FOREST_H_
