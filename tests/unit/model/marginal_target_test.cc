// MarginalTarget: exact and noised block histograms, the KL loss and its gradient.
#include "common/model/marginal_target.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace vfsynth {
namespace {

// Columns: a 3-way one-hot block, a tanh scalar, a 2-way one-hot block.
std::vector<OutputBlock> Blocks() {
  return {{BlockKind::kSoftmax, 0, 3}, {BlockKind::kTanh, 3, 1}, {BlockKind::kSoftmax, 4, 2}};
}

torch::Tensor Table() {
  // Block 1: categories 0,0,1,2 -> 1/2, 1/4, 1/4; block 2: 1,1,1,0 -> 1/4, 3/4.
  return torch::tensor({{1.0, 0.0, 0.0, 0.5, 0.0, 1.0},
                        {1.0, 0.0, 0.0, -0.5, 0.0, 1.0},
                        {0.0, 1.0, 0.0, 0.1, 0.0, 1.0},
                        {0.0, 0.0, 1.0, 0.9, 1.0, 0.0}},
                       torch::kFloat32);
}

TEST(MarginalTargetTest, ExactMarginalsOfOneHotBlocksOnly) {
  auto target = MarginalTarget::FromTable(Table(), Blocks(), 1, 0, std::nullopt);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->blocks(), 2);
  const torch::Tensor expected = torch::tensor({0.5, 0.25, 0.25, 0.25, 0.75}, torch::kDouble);
  EXPECT_TRUE(torch::allclose(target->probabilities(), expected)) << target->probabilities();
}

TEST(MarginalTargetTest, LossIsZeroAtTheTargetAndPositiveElsewhere) {
  auto target = MarginalTarget::FromTable(Table(), Blocks(), 1, 0, std::nullopt);
  ASSERT_TRUE(target.ok());
  // The real rows themselves have exactly the target's batch means.
  EXPECT_NEAR(target->Loss(Table()).item<double>(), 0.0, 1e-6);
  // A batch that always picks the first category of each block: KL = sum p log(p / q).
  torch::Tensor collapsed = torch::tensor({{1.0, 0.0, 0.0, 0.0, 1.0, 0.0}}, torch::kFloat32).repeat({4, 1});
  const double kl = target->Loss(collapsed).item<double>();
  EXPECT_GT(kl, 1.0);  // categories with no mass: log of the 1e-12 floor
  EXPECT_TRUE(std::isfinite(kl));
}

TEST(MarginalTargetTest, GradientPullsTheBatchMeanTowardsTheTarget) {
  auto target = MarginalTarget::FromTable(Table(), Blocks(), 1, 0, std::nullopt);
  ASSERT_TRUE(target.ok());
  // Uniform softmax outputs: block 1's first category (target 1/2 > 1/3) must get a
  // more negative gradient than the others (target 1/4 < 1/3).
  torch::Tensor slice = torch::tensor({{1.0 / 3, 1.0 / 3, 1.0 / 3, 0.0, 0.5, 0.5}}, torch::kFloat32)
                            .repeat({8, 1})
                            .requires_grad_(true);
  target->Loss(slice).backward();
  const torch::Tensor g = slice.grad();
  EXPECT_LT(g[0][0].item<double>(), g[0][1].item<double>());
  EXPECT_DOUBLE_EQ(g[0][3].item<double>(), 0.0);  // the scalar column has no target
  EXPECT_LT(g[0][5].item<double>(), g[0][4].item<double>());  // block 2: 3/4 vs 1/4
}

TEST(MarginalTargetTest, NoiseHasTheHistogramSensitivityScale) {
  // One 2-way block over 200,000 identical rows: the noised counts deviate from
  // (200000, 0) by N(0, (z·√2)²) each; over many draws the first probability's spread
  // is z·√2 / N (the zero count is clamped, which only matters at this scale for it).
  const int64_t n = 200000;
  torch::Tensor table = torch::zeros({n, 2});
  table.select(1, 1).fill_(1);
  table.select(1, 0).fill_(0);
  const double z = 1000;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(7);
  std::vector<double> p1;
  for (int i = 0; i < 400; ++i) {
    auto target = MarginalTarget::FromTable(table, {{BlockKind::kSoftmax, 0, 2}}, 1, z, gen);
    ASSERT_TRUE(target.ok());
    p1.push_back(target->probabilities()[1].item<double>());
  }
  // P(count_0 noisy > 0) = 1/2: then p1 = N / (N + noise_0 + noise_1) < 1.
  const double share_below_one = std::count_if(p1.begin(), p1.end(), [](double p) { return p < 1; }) / 400.0;
  EXPECT_NEAR(share_below_one, 0.5, 0.1);
  double spread = 0;
  for (double p : p1) spread = std::max(spread, 1 - p);
  // Largest deviation over 400 draws of a half-normal with std z·√2/N ≈ 0.00707 (≈ 3 std).
  EXPECT_GT(spread, 0.01);
  EXPECT_LT(spread, 0.05);
}

// Two declared bins plus a missing slot, then the within-bin position: with 4 parts per
// bin the histogram has 2·4 + 1 cells.
TEST(MarginalTargetTest, RefinesBinsByTheWithinBinPosition) {
  OutputBlock bins{BlockKind::kSoftmax, 0, 3};
  bins.position_offset = 3;
  bins.position_slots = 2;
  const std::vector<OutputBlock> blocks = {bins, {BlockKind::kTanh, 3, 1}};
  const torch::Tensor table = torch::tensor({{1.0, 0.0, 0.0, -0.75},   // bin 0, part 0
                                             {1.0, 0.0, 0.0, 0.9},     // bin 0, part 3
                                             {0.0, 1.0, 0.0, -0.1},    // bin 1, part 1
                                             {0.0, 0.0, 1.0, 0.0}},    // missing
                                            torch::kFloat32);
  auto target = MarginalTarget::FromTable(table, blocks, 4, 0, std::nullopt);
  ASSERT_TRUE(target.ok()) << target.status();
  const torch::Tensor expected =
      torch::tensor({0.25, 0.0, 0.0, 0.25, 0.0, 0.25, 0.0, 0.0, 0.25}, torch::kDouble);
  EXPECT_TRUE(torch::allclose(target->probabilities(), expected)) << target->probabilities();
  // Rows at the parts' centres are (nearly) their own soft histogram.
  const torch::Tensor centred = torch::tensor({{1.0, 0.0, 0.0, -0.75},
                                               {1.0, 0.0, 0.0, 0.75},
                                               {0.0, 1.0, 0.0, -0.25},
                                               {0.0, 0.0, 1.0, 0.0}},
                                              torch::kFloat32);
  EXPECT_LT(target->Loss(centred).item<double>(), 0.05);
  // Moving bin 0's second row to the bottom of the bin costs: the shape inside the bin counts.
  torch::Tensor moved = centred.clone();
  moved[1][3] = -0.75;
  EXPECT_GT(target->Loss(moved).item<double>(), 1.0);
  // The position gets a gradient (towards the upper part), not only the bins.
  moved.requires_grad_(true);
  target->Loss(moved).backward();
  EXPECT_NE(moved.grad()[1][3].item<double>(), 0.0);
  // One part per bin is the plain bins histogram.
  auto plain = MarginalTarget::FromTable(table, blocks, 1, 0, std::nullopt);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(torch::allclose(plain->probabilities(), torch::tensor({0.5, 0.25, 0.25}, torch::kDouble)));
}

TEST(MarginalTargetTest, RejectsBadInput) {
  EXPECT_FALSE(MarginalTarget::FromTable(torch::zeros({0, 6}), Blocks(), 1, 0, std::nullopt).ok());
  EXPECT_FALSE(MarginalTarget::FromTable(torch::zeros({4, 5}), Blocks(), 1, 0, std::nullopt).ok());
  EXPECT_FALSE(MarginalTarget::FromTable(Table(), Blocks(), 1, 0, at::make_generator<at::CPUGeneratorImpl>(1)).ok());
  auto target = MarginalTarget::FromTable(Table(), Blocks(), 1, 0, std::nullopt);
  ASSERT_TRUE(target.ok());
  EXPECT_FALSE(target->WithProbabilities(torch::ones({5}, torch::kDouble)).ok());  // not summing to 1
  EXPECT_FALSE(target->WithProbabilities(torch::ones({4}, torch::kDouble)).ok());  // wrong width
  auto same = target->WithProbabilities(target->probabilities());
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(torch::equal(same->probabilities(), target->probabilities()));
}

}  // namespace
}  // namespace vfsynth
