#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "common/eval/classification_metrics.h"
#include "common/eval/logistic_regression.h"
#include "common/eval/mlp_classifier.h"
#include "common/eval/random_forest.h"

namespace vfsynth {
namespace {

TEST(ClassificationMetricsTest, HandComputedScores) {
  // truth    1 1 1 0 0 0 0 0 ; predicted 1 1 0 1 0 0 0 0
  // class 1: tp 2 fp 1 fn 1 -> F1 = 4/6; class 0: tp 4 fp 1 fn 1 -> F1 = 8/10.
  const ClassificationScores s =
      ScorePredictions({1, 1, 1, 0, 0, 0, 0, 0}, {1, 1, 0, 1, 0, 0, 0, 0}, 2, 1);
  EXPECT_DOUBLE_EQ(s.accuracy, 6.0 / 8);
  EXPECT_NEAR(s.binary_f1, 4.0 / 6, 1e-12);
  EXPECT_NEAR(s.macro_f1, (4.0 / 6 + 0.8) / 2, 1e-12);
  // A class absent from truth and predictions is left out of the macro mean.
  EXPECT_NEAR(ScorePredictions({0, 1}, {0, 1}, 3, -1).macro_f1, 1.0, 1e-12);
  EXPECT_EQ(MinorityClass({0, 0, 1, 2, 2}, 4), 1);
}

// Two informative features (label = x0 + x1 > 1) among eight noise features.
struct RuleData {
  FeatureMatrix x;
  std::vector<int> y;
};
RuleData MakeRule(int64_t rows, uint64_t seed, int classes) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  RuleData d;
  d.x.rows = rows;
  d.x.cols = 10;
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < 10; ++c)
      d.x.values.push_back(c == 9 ? (u(rng) < 0.5f ? 1.f : 0.f) : u(rng));
    const float s = d.x.values[r * 10] + d.x.values[r * 10 + 1];
    d.y.push_back(classes == 2 ? (s > 1 ? 1 : 0)
                               : std::min(classes - 1, static_cast<int>(s / 2 * classes)));
  }
  return d;
}

double Accuracy(const Classifier& model, const RuleData& test, int classes) {
  const auto predicted = model.Predict(test.x);
  EXPECT_TRUE(predicted.ok());
  return ScorePredictions(test.y, *predicted, classes, -1).accuracy;
}

TEST(RandomForestTest, LearnsASimpleRule) {
  const RuleData train = MakeRule(4000, 1, 2), test = MakeRule(2000, 2, 2);
  RandomForestOptions options;
  options.trees = 50;
  RandomForest forest(options);
  ASSERT_TRUE(forest.Fit(train.x, train.y, 2).ok());
  EXPECT_GT(Accuracy(forest, test, 2), 0.94);
}

TEST(RandomForestTest, LearnsAThreeClassRuleAndProbabilitiesSumToOne) {
  const RuleData train = MakeRule(4000, 3, 3), test = MakeRule(1000, 4, 3);
  RandomForestOptions options;
  options.trees = 30;
  RandomForest forest(options);
  ASSERT_TRUE(forest.Fit(train.x, train.y, 3).ok());
  EXPECT_GT(Accuracy(forest, test, 3), 0.9);
  const auto proba = forest.PredictProba(test.x);
  ASSERT_TRUE(proba.ok());
  EXPECT_NEAR((*proba)[0] + (*proba)[1] + (*proba)[2], 1.0, 1e-6);
}

TEST(RandomForestTest, SingleFullTreeFitsTrainingDataAndIsThreadCountInvariant) {
  const RuleData train = MakeRule(500, 5, 2);
  RandomForestOptions single;
  single.trees = 1;
  single.max_features = 10;  // all features: a plain CART tree
  single.bootstrap = false;
  RandomForest tree(single);
  ASSERT_TRUE(tree.Fit(train.x, train.y, 2).ok());
  EXPECT_DOUBLE_EQ(Accuracy(tree, train, 2), 1.0);  // grown until pure, distinct rows

  RandomForestOptions options;
  options.trees = 8;
  options.seed = 9;
  options.threads = 1;
  RandomForest one(options);
  options.threads = 2;
  RandomForest two(options);
  ASSERT_TRUE(one.Fit(train.x, train.y, 2).ok());
  ASSERT_TRUE(two.Fit(train.x, train.y, 2).ok());
  EXPECT_EQ(*one.PredictProba(train.x), *two.PredictProba(train.x));
  EXPECT_EQ(one.total_nodes(), two.total_nodes());
}

TEST(RandomForestTest, RejectsBadInput) {
  RandomForest forest;
  FeatureMatrix x{2, 1, {0, 1}};
  EXPECT_FALSE(forest.Fit(x, {0, 3}, 2).ok());
  EXPECT_FALSE(forest.PredictProba(x).ok());
}

TEST(LogisticRegressionTest, LearnsALinearRule) {
  const RuleData train = MakeRule(3000, 6, 2), test = MakeRule(1000, 7, 2);
  LogisticRegression model;
  ASSERT_TRUE(model.Fit(train.x, train.y, 2).ok());
  EXPECT_GT(Accuracy(model, test, 2), 0.95);
}

TEST(MlpClassifierTest, LearnsALinearRule) {
  const RuleData train = MakeRule(3000, 8, 2), test = MakeRule(1000, 9, 2);
  MlpOptions options;
  options.epochs = 30;
  MlpClassifier model(options);
  ASSERT_TRUE(model.Fit(train.x, train.y, 2).ok());
  EXPECT_GT(Accuracy(model, test, 2), 0.95);
}

}  // namespace
}  // namespace vfsynth
