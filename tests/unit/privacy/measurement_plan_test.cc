// The measured-marginals mode's plan: which histograms, at what noise, for what ε.
#include "common/privacy/measurement_plan.h"

#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/config/config.h"
#include "common/privacy/accountant.h"
#include "common/privacy/privacy_plan.h"

namespace vfsynth {
namespace {

using privacy::Measurement;
using privacy::PlannedBlock;

// Three parties: 2 and 10 categories at party 0 (the first is the label), 20 and 30 at
// party 1, 5 at party 2.
std::vector<PlannedBlock> Blocks() {
  return {{0, 2, 2, true}, {0, 10, 40, false}, {1, 20, 20, false}, {1, 30, 30, false},
          {2, 5, 5, false}};
}

TEST(MeasurementPlanTest, MeasuresEveryColumnThenSmallPairsAndEveryLabelPair) {
  privacy::PlanOptions options;
  options.rho = 0.5;
  options.max_pair_cells = 200;
  const auto plan = privacy::PlanMeasurements(Blocks(), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // 5 one-way, then pairs: label with all 4 others, 10x20, 10x5, 20x5, 30x5 (10x30 = 300
  // and 20x30 = 600 exceed 200).
  ASSERT_EQ(plan->size(), 5u + 4u + 4u);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ((*plan)[i].blocks, std::vector<int>{i});
    EXPECT_EQ((*plan)[i].cells, Blocks()[i].refined);
    EXPECT_FALSE((*plan)[i].cross_party);
  }
  std::vector<std::vector<int>> pairs;
  for (size_t k = 5; k < plan->size(); ++k) pairs.push_back((*plan)[k].blocks);
  const std::vector<std::vector<int>> expected = {{0, 1}, {0, 2}, {0, 3}, {0, 4},
                                                  {1, 2}, {1, 4}, {2, 4}, {3, 4}};
  EXPECT_EQ(pairs, expected);
  EXPECT_FALSE((*plan)[5].cross_party);  // label x its own column
  EXPECT_TRUE((*plan)[6].cross_party);
  EXPECT_EQ((*plan)[6].cells, 40);  // unrefined widths: 2 x 20
}

TEST(MeasurementPlanTest, TheNoiseSpendsExactlyTheBudgetInTheWeightsProportions) {
  privacy::PlanOptions options;
  options.rho = 0.2;
  options.max_pair_cells = 1000;
  options.pair_weight = 2;
  options.label_pair_weight = 5;
  const auto plan = privacy::PlanMeasurements(Blocks(), options);
  ASSERT_TRUE(plan.ok());
  EXPECT_NEAR(privacy::MeasurementsRho(*plan), 0.2, 1e-12);
  // ρ_j = 1/σ_j² is proportional to the weight.
  const double one_way = 1 / ((*plan)[1].sigma * (*plan)[1].sigma);
  for (const Measurement& m : *plan) {
    const bool label = m.blocks.size() == 2 && m.blocks[0] == 0;
    const double weight = m.blocks.size() == 1 ? 1 : label ? 5 : 2;
    EXPECT_NEAR(1 / (m.sigma * m.sigma), weight * one_way, 1e-12);
  }
}

TEST(MeasurementPlanTest, RefusesNoBudgetAndBadSizes) {
  privacy::PlanOptions options;
  options.max_pair_cells = 10;
  EXPECT_FALSE(privacy::PlanMeasurements(Blocks(), options).ok());  // ρ = 0
  options.rho = std::nan("");
  EXPECT_FALSE(privacy::PlanMeasurements(Blocks(), options).ok());
  options.rho = 1;
  EXPECT_FALSE(privacy::PlanMeasurements({{0, 0, 0, false}}, options).ok());
  EXPECT_FALSE(privacy::PlanMeasurements({{0, 4, 2, false}}, options).ok());  // cells < width
  options.one_way_weight = 0;
  EXPECT_FALSE(privacy::PlanMeasurements(Blocks(), options).ok());
}

v1::PrivacyConfig MarginalsPrivacy(double epsilon) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::marginals);
  privacy.set_epsilon(epsilon);
  EXPECT_TRUE(ResolvePrivacyConfig(&privacy).ok());
  return privacy;
}

std::vector<v1::PlannedColumn> Columns() {
  std::vector<v1::PlannedColumn> columns;
  int i = 0;
  for (const PlannedBlock& block : Blocks()) {
    v1::PlannedColumn column;
    column.set_party(block.party);
    column.set_name(absl::StrCat("c", i++));
    column.set_width(block.width);
    column.set_cells(block.refined);
    column.set_label(block.label);
    columns.push_back(column);
  }
  return columns;
}

TEST(MarginalsPlanTest, EveryObserverGetsTheRunsEpsilon) {
  for (const double epsilon : {0.5, 1.0, 10.0}) {
    const auto plan = ResolveMarginalsPlan(MarginalsPrivacy(epsilon), v1::TrainingConfig(),
                                           Columns(), 3, 5000);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->guarantees_size(), 4);
    for (const v1::ObserverGuarantee& guarantee : plan->guarantees()) {
      ASSERT_TRUE(guarantee.has_epsilon_planned()) << guarantee.observer();
      EXPECT_LE(guarantee.epsilon_planned(), epsilon * (1 + 1e-6)) << guarantee.observer();
      EXPECT_GT(guarantee.epsilon_planned(), epsilon * 0.999) << guarantee.observer();
    }
    EXPECT_TRUE(CheckPlanBudgets(*plan).ok());
    // Every party charges the whole measurement, whatever the fit's rounds.
    const auto own = OwnReleasesEpsilonAfter(*plan, 0);
    ASSERT_TRUE(own.ok() && own->has_value());
    EXPECT_DOUBLE_EQ(**own, plan->guarantees(0).epsilon_planned());
  }
}

TEST(MarginalsPlanTest, TheComposedMeasurementsAreOneGaussianOfTheirRho) {
  const auto plan =
      ResolveMarginalsPlan(MarginalsPrivacy(1.0), v1::TrainingConfig(), Columns(), 3, 5000);
  ASSERT_TRUE(plan.ok());
  double rho = 0;
  for (const v1::MeasuredHistogram& h : plan->measurements()) rho += 1 / (h.sigma() * h.sigma());
  // Replace-one sensitivity √2 per histogram: ρ = Σ 1/σ², the Gaussian of z = 1/√(2ρ).
  EXPECT_NEAR(1 / std::sqrt(2 * rho), plan->noise_multiplier(), 1e-9);
  privacy::StepMechanism one;
  one.noise_multipliers = {plan->noise_multiplier()};
  const auto epsilon =
      privacy::ComputeEpsilon(one, 1, 1e-5, privacy::Conversion::kImproved);
  ASSERT_TRUE(epsilon.ok());
  EXPECT_NEAR(plan->guarantees(0).epsilon_planned(), epsilon->epsilon, 1e-9);
  // Never above Bun and Steinke's zCDP conversion, ρ + 2√(ρ ln(1/δ)).
  EXPECT_LE(epsilon->epsilon, rho + 2 * std::sqrt(rho * std::log(1e5)));
  EXPECT_GT(epsilon->epsilon, 0.8 * (rho + 2 * std::sqrt(rho * std::log(1e5))));
}

TEST(MarginalsPlanTest, TheRoundsPlanRefusesTheMeasuredMode) {
  v1::TrainingConfig training;
  training.set_batch_size(10);
  const auto plan = ResolvePrivacyPlan(MarginalsPrivacy(1.0), training, 3, 5000);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("parties' columns"), std::string::npos);
}

TEST(MarginalsPlanTest, RefusesAnotherModeAColumnOfNoPartyAndNoBudget) {
  v1::PrivacyConfig strict = MarginalsPrivacy(1.0);
  strict.set_mode(v1::PrivacyConfig::strict);
  EXPECT_FALSE(ResolveMarginalsPlan(strict, v1::TrainingConfig(), Columns(), 3, 5000).ok());
  EXPECT_FALSE(
      ResolveMarginalsPlan(MarginalsPrivacy(1.0), v1::TrainingConfig(), Columns(), 2, 5000).ok());
  v1::PrivacyConfig no_budget = MarginalsPrivacy(1.0);
  no_budget.clear_epsilon();
  EXPECT_FALSE(ResolveMarginalsPlan(no_budget, v1::TrainingConfig(), Columns(), 3, 5000).ok());
}

}  // namespace
}  // namespace vfsynth
