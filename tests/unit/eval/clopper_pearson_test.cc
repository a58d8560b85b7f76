#include "common/eval/clopper_pearson.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vfsynth {
namespace {

TEST(IncompleteBetaTest, ClosedForms) {
  EXPECT_NEAR(RegularizedIncompleteBeta(1, 1, 0.3), 0.3, 1e-12);   // uniform
  EXPECT_NEAR(RegularizedIncompleteBeta(2, 1, 0.5), 0.25, 1e-12);  // x^2
  EXPECT_NEAR(RegularizedIncompleteBeta(1, 3, 0.2), 1 - std::pow(0.8, 3), 1e-12);
  EXPECT_NEAR(BetaQuantile(0.25, 2, 1), 0.5, 1e-9);
}

TEST(ClopperPearsonTest, EdgeCasesUseClosedForm) {
  EXPECT_NEAR(ClopperPearson(0, 1000).upper, 0.003682, 1e-6);
  EXPECT_NEAR(ClopperPearson(0, 100).upper, 0.036217, 1e-6);
  EXPECT_NEAR(ClopperPearson(100, 100).lower, 1 - 0.036217, 1e-6);
  EXPECT_EQ(ClopperPearson(0, 100).lower, 0);
}

// anchors-mission.md §5 reference table (α = 0.05).
struct Row {
  int fn, pos, fp, neg;
  double delta, fnr_ub, fpr_ub, eps_lb, point;
};

TEST(EmpiricalEpsilonTest, MatchesAnchorTable) {
  const Row rows[] = {
      {0, 1000, 0, 1000, 1e-5, 0.003682, 0.003682, 5.6006, INFINITY},
      {0, 100, 0, 100, 1e-5, 0.036217, 0.036217, 3.2813, INFINITY},
      {500, 1000, 50, 1000, 1e-5, 0.531451, 0.065390, 1.9692, 2.3026},
      {100, 1000, 100, 1000, 1e-5, 0.120288, 0.120288, 1.9897, 2.1972},
      {30, 500, 30, 500, 1e-5, 0.084549, 0.084549, 2.3821, 2.7515},
      {250, 500, 10, 500, 0, 0.544714, 0.036472, 2.5244, 3.2189},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(::testing::Message()
                 << row.fn << "/" << row.pos << " " << row.fp << "/" << row.neg);
    const EpsilonBound b = EmpiricalEpsilon(row.fn, row.pos, row.fp, row.neg, row.delta);
    EXPECT_NEAR(b.fnr_upper, row.fnr_ub, 1e-6);
    EXPECT_NEAR(b.fpr_upper, row.fpr_ub, 1e-6);
    EXPECT_NEAR(b.lower_bound, row.eps_lb, 1e-4);
    if (std::isinf(row.point)) {
      EXPECT_TRUE(std::isinf(b.point));
    } else {
      EXPECT_NEAR(b.point, row.point, 1e-4);
    }
  }
}

TEST(EmpiricalEpsilonTest, ChanceLevelAttackGivesZero) {
  EXPECT_EQ(EmpiricalEpsilon(15, 30, 15, 30, 1e-5).lower_bound, 0.0);
}

}  // namespace
}  // namespace vfsynth
