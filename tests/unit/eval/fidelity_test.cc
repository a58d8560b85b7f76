#include "common/eval/fidelity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace vfsynth {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Reference values: anchors-mission.md §4 (scipy ks_2samp / pearsonr, SDMetrics tests).
TEST(KsComplementTest, MatchesScipyReferenceValues) {
  EXPECT_NEAR(KsComplement({1, 2, 3, 4, 5}, {1, 2, 3, 4, 10}), 0.8, 1e-12);
  EXPECT_NEAR(KsComplement({1.0, 2.4, 2.6, 0.8}, {0.9, 1.8, 3.1, 5.0}), 0.5, 1e-12);
  EXPECT_NEAR(KsComplement({0, 0, 1, 1}, {0, 1, 1, 1}), 0.75, 1e-12);
}

TEST(KsComplementTest, IdenticalIsOneDisjointIsZeroAndNaNsDropped) {
  EXPECT_DOUBLE_EQ(KsComplement({3, 1, 2, 2}, {2, 1, 2, 3}), 1.0);
  EXPECT_DOUBLE_EQ(KsComplement({1, 2, 3}, {10, 11}), 0.0);
  EXPECT_NEAR(KsComplement({1, 2, 3, 4, 5, kNaN}, {kNaN, 1, 2, 3, 4, 10}), 0.8, 1e-12);
  EXPECT_TRUE(std::isnan(KsComplement({kNaN}, {1.0})));
}

TEST(TvComplementTest, MatchesSdmetricsTestValue) {
  // real a b c a a b, synthetic a b c a b c
  EXPECT_NEAR(TvComplement({0, 1, 2, 0, 0, 1}, {0, 1, 2, 0, 1, 2}), 0.8333333333333333, 1e-12);
}

TEST(TvComplementTest, DropsMissingAndHandlesDisjointCategories) {
  EXPECT_DOUBLE_EQ(TvComplement({0, 1, kMissingCode}, {1, 0}), 1.0);
  EXPECT_DOUBLE_EQ(TvComplement({0, 0}, {1, 1}), 0.0);
}

TEST(CorrelationSimilarityTest, MatchesScipyPearson) {
  const std::vector<double> ra = {1.0, 2.4, 2.6, 0.8}, rb = {1, 2, 3, 4};
  const std::vector<double> sa = {0.9, 1.8, 3.1, 5.0}, sb = {2, 3, 4, 1};
  EXPECT_NEAR(PearsonCorrelation(ra, rb), -0.0554700196, 1e-9);
  EXPECT_NEAR(PearsonCorrelation(sa, sb), -0.3482286001, 1e-9);
  EXPECT_NEAR(CorrelationSimilarity(ra, rb, sa, sb), 0.8536207098, 1e-9);
}

TEST(CorrelationSimilarityTest, ConstantColumnIsUndefined) {
  EXPECT_TRUE(std::isnan(PearsonCorrelation({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(CorrelationSimilarity({1, 1, 1}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3})));
}

TEST(ContingencySimilarityTest, MatchesReferenceValue) {
  // real (a,x) (a,y) (b,x) (b,x); synthetic (a,x) (a,x) (b,y) (b,x); a=0 b=1 x=0 y=1.
  EXPECT_NEAR(ContingencySimilarity({0, 0, 1, 1}, {0, 1, 0, 0}, {0, 0, 1, 1}, {0, 0, 1, 0}), 0.5,
              1e-12);
  EXPECT_DOUBLE_EQ(ContingencySimilarity({0, 1, 1}, {1, 0, 1}, {1, 0, 1}, {0, 1, 1}), 1.0);
}

TEST(CramersVTest, PerfectAndNoAssociation) {
  EXPECT_NEAR(CramersV({0, 0, 1, 1, 2, 2}, {5, 5, 6, 6, 7, 7}), 1.0, 1e-12);
  EXPECT_NEAR(CramersV({0, 0, 1, 1}, {0, 1, 0, 1}), 0.0, 1e-12);
}

TEST(DiscretiseTest, EqualWidthBinsOverTheRealRange) {
  const Binning b = RealRangeBinning({0, 10, kNaN, 5}, 10);
  EXPECT_EQ(b.lo, 0);
  EXPECT_EQ(b.hi, 10);
  EXPECT_THAT(Discretise({0, 0.99, 1, 9.5, 10, -1, 11, kNaN}, b),
              ::testing::ElementsAre(0, 0, 1, 9, 9, kBelowRange, 10, kMissingCode));
}

EvalColumn Numeric(const std::string& name, std::vector<double> values) {
  EvalColumn c;
  c.name = name;
  c.kind = ColumnKind::kContinuous;
  c.values = std::move(values);
  return c;
}

EvalColumn Categorical(const std::string& name, int categories, std::vector<int> codes) {
  EvalColumn c;
  c.name = name;
  c.kind = ColumnKind::kCategorical;
  c.num_categories = categories;
  c.codes = std::move(codes);
  return c;
}

EvalTable Table(std::vector<EvalColumn> columns) {
  EvalTable t;
  t.rows = columns.empty()        ? 0
           : columns[0].numeric() ? static_cast<int64_t>(columns[0].values.size())
                                  : static_cast<int64_t>(columns[0].codes.size());
  t.columns = std::move(columns);
  return t;
}

TEST(QualityTest, IdenticalTablesScorePerfectly) {
  const EvalTable t = Table({Numeric("x", {1, 2, 3, 4, 5, 6}), Numeric("y", {2, 1, 4, 3, 6, 5}),
                             Categorical("c", 3, {0, 1, 2, 0, 1, 2})});
  const QualityScores q = ComputeQuality(t, t);
  EXPECT_DOUBLE_EQ(q.column_shapes_score, 1.0);
  EXPECT_DOUBLE_EQ(q.pair_trends_score, 1.0);
  EXPECT_DOUBLE_EQ(q.overall, 1.0);
  ASSERT_EQ(q.pair_trends.size(), 3u);
  EXPECT_EQ(q.pair_trends[0].metric, "CorrelationSimilarity");
  EXPECT_EQ(q.pair_trends[1].metric, "ContingencySimilarity");
  EXPECT_DOUBLE_EQ(KWayAvd(t, t, 2, 20, 7), 0.0);
  EXPECT_DOUBLE_EQ(KWayAvd(t, t, 3, 20, 7), 0.0);
}

TEST(QualityTest, ReversedPairBreaksTrendsButNotShapes) {
  const EvalTable real = Table({Numeric("x", {1, 2, 3, 4}), Numeric("y", {1, 2, 3, 4})});
  const EvalTable syn = Table({Numeric("x", {1, 2, 3, 4}), Numeric("y", {4, 3, 2, 1})});
  const QualityScores q = ComputeQuality(real, syn);
  EXPECT_DOUBLE_EQ(q.column_shapes_score, 1.0);
  EXPECT_NEAR(q.pair_trends_score, 0.0, 1e-12);  // rho +1 vs -1
  EXPECT_NEAR(q.overall, 0.5, 1e-12);
}

TEST(KWayAvdTest, HandComputedTwoWayMarginal) {
  // Real cells (0,0) (0,1) (1,0) (1,1) at 1/4; synthetic (0,0) (0,1) at 1/2: TVD = 1/2.
  const EvalTable real =
      Table({Categorical("a", 2, {0, 0, 1, 1}), Categorical("b", 2, {0, 1, 0, 1})});
  const EvalTable syn =
      Table({Categorical("a", 2, {0, 0, 0, 0}), Categorical("b", 2, {0, 1, 0, 1})});
  EXPECT_NEAR(KWayAvd(real, syn, 2, 100, 1), 0.5, 1e-12);
  // 1-way: column a has TVD 1/2, column b 0; the mean over many random sets is near 1/4.
  EXPECT_NEAR(KWayAvd(real, syn, 1, 2000, 1), 0.25, 0.03);
}

TEST(KWayAvdTest, FourWayMarginalsKeepEveryCodeApart) {
  // Four binary columns: the synthetic rows flip the last column of every real row, so
  // no 4-way cell matches (TVD 1), while every 3-set without d matches exactly.
  const EvalTable real =
      Table({Categorical("a", 2, {0, 0, 1, 1}), Categorical("b", 2, {0, 1, 0, 1}),
             Categorical("c", 2, {1, 1, 0, 0}), Categorical("d", 2, {0, 1, 1, 0})});
  const EvalTable syn =
      Table({Categorical("a", 2, {0, 0, 1, 1}), Categorical("b", 2, {0, 1, 0, 1}),
             Categorical("c", 2, {1, 1, 0, 0}), Categorical("d", 2, {1, 0, 0, 1})});
  EXPECT_NEAR(KWayAvd(real, syn, 4, 10, 1), 1.0, 1e-12);
  EXPECT_NEAR(KWayAvd(real, real, 4, 10, 1), 0.0, 1e-12);
  EXPECT_TRUE(std::isnan(KWayAvd(real, syn, 5, 10, 1)));
}

TEST(AssociationMatrixTest, DiagonalOneAndSymmetric) {
  const EvalTable t = Table(
      {Numeric("x", {1, 2, 3, 4}), Numeric("y", {2, 4, 6, 8}), Categorical("c", 2, {0, 0, 1, 1})});
  const std::vector<double> m = AssociationMatrix(t, RealBinnings(t, 10));
  ASSERT_EQ(m.size(), 9u);
  EXPECT_DOUBLE_EQ(m[0], 1.0);
  EXPECT_NEAR(m[1], 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(m[2], m[6]);
  EXPECT_NEAR(m[2], 1.0, 1e-12);  // x's bins separate c's categories exactly
}

}  // namespace
}  // namespace vfsynth
