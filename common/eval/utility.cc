#include "common/eval/utility.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/eval/features.h"
#include "common/eval/logistic_regression.h"
#include "common/eval/mlp_classifier.h"
#include "common/eval/random_forest.h"

namespace vfsynth {
namespace {

struct TrainTest {
  LabeledData train;
  LabeledData test;
};

absl::StatusOr<TrainTest> SplitLabeled(const EvalTable& table, const v1::Schema& schema,
                                       const std::string& target, const UtilityOptions& options) {
  const RowSplit split = SplitRows(table.rows, options.train_fraction, options.seed);
  TrainTest out;
  ASSIGN_OR_RETURN(out.train, MakeLabeledData(table.Subset(split.first), schema, target,
                                              options.excluded_features));
  ASSIGN_OR_RETURN(out.test, MakeLabeledData(table.Subset(split.second), schema, target,
                                             options.excluded_features));
  if (out.train.x.rows == 0 || out.test.x.rows == 0) {
    return absl::InvalidArgumentError("too few rows with a target value to split 80/20");
  }
  return out;
}

// All of `train` for training, all of `test` for testing.
absl::StatusOr<TrainTest> LabeledPair(const EvalTable& train, const EvalTable& test,
                                      const v1::Schema& schema, const std::string& target,
                                      const std::vector<std::string>& excluded) {
  TrainTest out;
  ASSIGN_OR_RETURN(out.train, MakeLabeledData(train, schema, target, excluded));
  ASSIGN_OR_RETURN(out.test, MakeLabeledData(test, schema, target, excluded));
  if (out.train.x.rows == 0 || out.test.x.rows == 0) {
    return absl::InvalidArgumentError(
        "no rows with a target value in the real or the holdout table");
  }
  return out;
}

absl::StatusOr<ClassificationScores> Score(const Classifier& model, const LabeledData& test,
                                           int positive_class) {
  ASSIGN_OR_RETURN(const std::vector<int> predicted, model.Predict(test.x));
  return ScorePredictions(test.y, predicted, test.num_classes, positive_class);
}

}  // namespace

double TargetF1(int num_classes, const ClassificationScores& scores) {
  return num_classes == 2 ? scores.binary_f1 : scores.macro_f1;
}

absl::StatusOr<std::unique_ptr<Classifier>> MakeClassifier(const std::string& name,
                                                           const UtilityOptions& options) {
  if (name == "random_forest") {
    RandomForestOptions rf;
    rf.trees = options.forest_trees;
    rf.threads = options.threads;
    rf.seed = options.seed;
    return std::unique_ptr<Classifier>(new RandomForest(rf));
  }
  if (name == "logistic_regression") return std::unique_ptr<Classifier>(new LogisticRegression());
  if (name == "mlp") {
    MlpOptions mlp;
    mlp.seed = options.seed;
    mlp.threads = options.threads;
    return std::unique_ptr<Classifier>(new MlpClassifier(mlp));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model '", name, "' (random_forest, logistic_regression, mlp)"));
}

absl::StatusOr<UtilityResult> ComputeUtility(const EvalTable& real, const EvalTable& synthetic,
                                             const v1::Schema& schema, const std::string& target,
                                             const UtilityOptions& options,
                                             const EvalTable* real_test) {
  ASSIGN_OR_RETURN(const TrainTest r,
                   real_test != nullptr
                       ? LabeledPair(real, *real_test, schema, target, options.excluded_features)
                       : SplitLabeled(real, schema, target, options));
  ASSIGN_OR_RETURN(const TrainTest s, SplitLabeled(synthetic, schema, target, options));
  UtilityResult result;
  result.target = target;
  result.excluded_features = options.excluded_features;
  result.num_classes = r.train.num_classes;
  result.real_train_rows = r.train.x.rows;
  result.real_test_rows = r.test.x.rows;
  result.synthetic_train_rows = s.train.x.rows;
  result.synthetic_test_rows = s.test.x.rows;
  if (result.num_classes == 2) {
    std::vector<int> all = r.train.y;
    all.insert(all.end(), r.test.y.begin(), r.test.y.end());
    result.positive_class = MinorityClass(all, result.num_classes);
    const int target_index = real.ColumnIndex(target);
    result.positive_label = schema.columns(target_index).categories(result.positive_class);
  }
  for (const std::string& name : options.models) {
    ASSIGN_OR_RETURN(std::unique_ptr<Classifier> on_real, MakeClassifier(name, options));
    ASSIGN_OR_RETURN(std::unique_ptr<Classifier> on_synthetic, MakeClassifier(name, options));
    RETURN_IF_ERROR(on_real->Fit(r.train.x, r.train.y, r.train.num_classes));
    RETURN_IF_ERROR(on_synthetic->Fit(s.train.x, s.train.y, s.train.num_classes));
    ModelUtility m;
    m.model = name;
    ASSIGN_OR_RETURN(m.trtr, Score(*on_real, r.test, result.positive_class));
    ASSIGN_OR_RETURN(m.trts, Score(*on_real, s.test, result.positive_class));
    ASSIGN_OR_RETURN(m.tstr, Score(*on_synthetic, r.test, result.positive_class));
    ASSIGN_OR_RETURN(m.tsts, Score(*on_synthetic, s.test, result.positive_class));
    for (const ClassificationScores* other : {&m.tsts, &m.trts, &m.tstr}) {
      m.total_difference +=
          std::abs(other->accuracy - m.trtr.accuracy) +
          std::abs(TargetF1(result.num_classes, *other) - TargetF1(result.num_classes, m.trtr));
    }
    spdlog::info("utility {}: TRTR acc {:.4f} TSTR acc {:.4f} total difference {:.4f}", name,
                 m.trtr.accuracy, m.tstr.accuracy, m.total_difference);
    result.models.push_back(m);
  }
  return result;
}

}  // namespace vfsynth
