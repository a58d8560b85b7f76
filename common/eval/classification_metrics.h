#ifndef VFSYNTH_COMMON_EVAL_CLASSIFICATION_METRICS_H_
#define VFSYNTH_COMMON_EVAL_CLASSIFICATION_METRICS_H_

#include <vector>

namespace vfsynth {

struct ClassificationScores {
  double accuracy = 0;
  double binary_f1 = 0;  // F1 of `positive_class`; NaN when none was given
  double macro_f1 = 0;   // unweighted mean F1 over classes in truth ∪ predictions
};

// Scores as scikit-learn's accuracy_score / f1_score (F1 of a class with no true
// or predicted positives counts as 0 for the binary score).
ClassificationScores ScorePredictions(const std::vector<int>& truth,
                                      const std::vector<int>& predicted, int num_classes,
                                      int positive_class);

// Area under the ROC curve of `scores` for binary `labels` (1 = positive), ties
// counted half (Mann–Whitney U). NaN when a class is absent.
double RocAuc(const std::vector<double>& scores, const std::vector<int>& labels);

// The least frequent class among those present in `labels` (ties: lower index).
int MinorityClass(const std::vector<int>& labels, int num_classes);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_CLASSIFICATION_METRICS_H_
