#ifndef VFSYNTH_COMMON_EVAL_UTILITY_H_
#define VFSYNTH_COMMON_EVAL_UTILITY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/eval/classification_metrics.h"
#include "common/eval/classifier.h"
#include "common/eval/eval_table.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

struct UtilityOptions {
  // Any of "random_forest", "logistic_regression", "mlp".
  std::vector<std::string> models = {"random_forest", "logistic_regression", "mlp"};
  int forest_trees = 100;
  int threads = 2;
  uint64_t seed = 0;
  double train_fraction = 0.8;
  // Columns the models may not use as features (besides the target).
  std::vector<std::string> excluded_features;
};

// Builds a classifier by name (see UtilityOptions::models).
absl::StatusOr<std::unique_ptr<Classifier>> MakeClassifier(const std::string& name,
                                                           const UtilityOptions& options);

struct ModelUtility {
  std::string model;
  ClassificationScores trtr, tstr, trts, tsts;
  // VFLGAN: sum over TSTS, TRTS, TSTR of |acc - acc_TRTR| + |F1 - F1_TRTR| (binary F1
  // for a binary target, macro-F1 otherwise). Lower is better.
  double total_difference = 0;
};

struct UtilityResult {
  std::string target;
  int num_classes = 0;
  int positive_class = -1;  // minority class of the real data (binary targets), else -1
  std::string positive_label;
  std::vector<std::string> excluded_features;
  int64_t real_train_rows = 0, real_test_rows = 0;
  int64_t synthetic_train_rows = 0, synthetic_test_rows = 0;
  std::vector<ModelUtility> models;
};

// The F1 that scores a target of `num_classes` classes: binary F1 for two, macro-F1 otherwise.
double TargetF1(int num_classes, const ClassificationScores& scores);

// Real and synthetic tables are each split train_fraction / rest with `seed`.
// TRTR/TRTS use a model fitted on the real train part, TSTR/TSTS one fitted on the
// synthetic train part; TRTR and TSTR test on the same real test part, TRTS and
// TSTS on the synthetic test part. With `real_test` (real rows the generator never
// saw), the real train part is all of `real` and the real test part is `real_test`.
absl::StatusOr<UtilityResult> ComputeUtility(const EvalTable& real, const EvalTable& synthetic,
                                             const v1::Schema& schema, const std::string& target,
                                             const UtilityOptions& options,
                                             const EvalTable* real_test = nullptr);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_UTILITY_H_
