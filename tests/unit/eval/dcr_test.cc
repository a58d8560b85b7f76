#include "common/eval/dcr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace vfsynth {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

EvalTable TwoColumns(std::vector<double> x, std::vector<int> c) {
  EvalTable t;
  t.rows = static_cast<int64_t>(x.size());
  EvalColumn num;
  num.name = "x";
  num.kind = ColumnKind::kContinuous;
  num.values = std::move(x);
  EvalColumn cat;
  cat.name = "c";
  cat.kind = ColumnKind::kCategorical;
  cat.num_categories = 3;
  cat.codes = std::move(c);
  t.columns = {num, cat};
  return t;
}

TEST(DcrTest, HandComputedDistances) {
  const EvalTable reference = TwoColumns({0, 10}, {0, 1});  // range of x = 10
  const EvalTable rows = TwoColumns({2, 9, 50, kNaN}, {1, 1, 2, 0});
  const std::vector<double> d =
      DistanceToClosestRecord(rows, reference, ColumnRanges({&reference}));
  ASSERT_EQ(d.size(), 4u);
  EXPECT_NEAR(d[0], 0.5 * 0.8, 1e-12);  // (0,a): 0.2+1; (10,b): 0.8+0 is closer
  EXPECT_NEAR(d[1], 0.5 * 0.1, 1e-12);
  EXPECT_NEAR(d[2], 0.5 * (1 + 1), 1e-12);  // numeric distance capped at 1
  EXPECT_NEAR(d[3], 0.5 * (1 + 0), 1e-12);  // missing vs value = 1
  EXPECT_NEAR(Median({3, 1, 2, 10}), 2.5, 1e-12);
}

TEST(DcrTest, CopiedTrainingRowsAreAlwaysCloserToTrain) {
  const EvalTable train = TwoColumns({1, 2, 3, 4, 5, 6}, {0, 1, 2, 0, 1, 2});
  const EvalTable holdout = TwoColumns({1.5, 2.5, 3.5, 4.5, 5.5, 6.5}, {1, 2, 0, 1, 2, 0});
  const DcrResult memorised = ComputeDcr(train, train, holdout, DcrOptions{});
  EXPECT_DOUBLE_EQ(memorised.share_closer_to_train, 1.0);
  EXPECT_DOUBLE_EQ(memorised.overfitting_protection, 0.0);
  EXPECT_DOUBLE_EQ(memorised.median_to_train, 0.0);
  const DcrResult fresh = ComputeDcr(holdout, train, holdout, DcrOptions{});
  EXPECT_DOUBLE_EQ(fresh.share_closer_to_train, 0.0);
  EXPECT_DOUBLE_EQ(fresh.overfitting_protection, 1.0);
}

}  // namespace
}  // namespace vfsynth
