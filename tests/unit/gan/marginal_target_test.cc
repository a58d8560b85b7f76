// MarginalTarget: exact and noised block histograms, the KL loss and its gradient.
#include "common/gan/marginal_target.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/random/secure_random.h"
#include "tests/unit/gan/small_encoded_table.h"

namespace vfsynth {
namespace {

constexpr double kForwardOnly = 0.0;  // Loss's reverse_weight: KL(target || batch) alone

std::vector<OutputBlock> Blocks() { return SmallTableBlocks(); }
torch::Tensor Table() { return SmallTable(); }

TEST(MarginalTargetTest, ExactMarginalsOfOneHotBlocksOnly) {
  auto target = MarginalTarget::FromTable(Table(), Blocks(), MarginalOptions{1}, 0, nullptr);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->blocks(), 2);
  const torch::Tensor expected = torch::tensor({0.5, 0.25, 0.25, 0.25, 0.75}, torch::kDouble);
  EXPECT_TRUE(torch::allclose(target->probabilities(), expected)) << target->probabilities();
}

TEST(MarginalTargetTest, ALargeTablesCountsAreExactlyItsRowsCounts) {
  // 80,000 rows (more than one chunk of counting): 20,000 copies of the small table with
  // its first row changed in the last copy, so a dropped or doubled chunk would show.
  torch::Tensor large = Table().repeat({20000, 1});
  large[79996] = Table()[1];
  auto target =
      MarginalTarget::FromTable(Table(), Blocks(), MarginalOptions{1, /*pair_cells=*/6}, 0, nullptr);
  ASSERT_TRUE(target.ok()) << target.status();
  const torch::Tensor expected = target->TableCounts(Table()) * 20000 -
                                 target->TableCounts(Table().narrow(0, 0, 1)) +
                                 target->TableCounts(Table().narrow(0, 1, 1));
  EXPECT_TRUE(torch::equal(target->TableCounts(large), expected))
      << target->TableCounts(large) << expected;
}

TEST(MarginalTargetTest, LossIsZeroAtTheTargetAndPositiveElsewhere) {
  auto target = MarginalTarget::FromTable(Table(), Blocks(), MarginalOptions{1}, 0, nullptr);
  ASSERT_TRUE(target.ok());
  // The real rows themselves have exactly the target's batch means, with or without the
  // reverse term.
  EXPECT_NEAR(target->Loss(Table(), kForwardOnly).item<double>(), 0.0, 1e-6);
  EXPECT_NEAR(target->Loss(Table(), 1.0).item<double>(), 0.0, 1e-6);
  // A batch that always picks the first category of each block: KL = sum p log(p / q).
  torch::Tensor collapsed =
      torch::tensor({{1.0, 0.0, 0.0, 0.0, 1.0, 0.0}}, torch::kFloat32).repeat({4, 1});
  const double kl = target->Loss(collapsed, kForwardOnly).item<double>();
  EXPECT_GT(kl, 1.0);  // categories with no mass: log of the 1e-12 floor
  EXPECT_TRUE(std::isfinite(kl));
}

TEST(MarginalTargetTest, GradientPullsTheBatchMeanTowardsTheTarget) {
  auto target = MarginalTarget::FromTable(Table(), Blocks(), MarginalOptions{1}, 0, nullptr);
  ASSERT_TRUE(target.ok());
  // Uniform softmax outputs: block 1's first category (target 1/2 > 1/3) must get a
  // more negative gradient than the others (target 1/4 < 1/3).
  torch::Tensor slice = torch::tensor({{1.0 / 3, 1.0 / 3, 1.0 / 3, 0.0, 0.5, 0.5}}, torch::kFloat32)
                            .repeat({8, 1})
                            .requires_grad_(true);
  target->Loss(slice, kForwardOnly).backward();
  const torch::Tensor g = slice.grad();
  EXPECT_LT(g[0][0].item<double>(), g[0][1].item<double>());
  EXPECT_DOUBLE_EQ(g[0][3].item<double>(), 0.0);              // the scalar column has no target
  EXPECT_LT(g[0][5].item<double>(), g[0][4].item<double>());  // block 2: 3/4 vs 1/4
}

TEST(MarginalTargetTest, ReverseTermPushesMassOutOfCellsTheTargetLeavesEmpty) {
  // The first three rows: block 1's target is (2/3, 1/3, 0), block 2's (0, 1).
  auto target =
      MarginalTarget::FromTable(Table().narrow(0, 0, 3), Blocks(), MarginalOptions{1}, 0, nullptr);
  ASSERT_TRUE(target.ok());
  // A batch with a tenth of block 1's mass in the empty cell and the rest in the target's
  // proportions: the forward KL sees almost nothing wrong, the reverse term a lot.
  const auto gradient = [&](double reverse_weight, double* loss) {
    torch::Tensor slice = torch::tensor({{0.6, 0.3, 0.1, 0.0, 0.0, 1.0}}, torch::kFloat32)
                              .repeat({6, 1})
                              .requires_grad_(true);
    const torch::Tensor value = target->Loss(slice, reverse_weight);
    *loss = value.item<double>();
    value.backward();
    return slice.grad()[0];
  };
  double forward_loss = 0, both_loss = 0;
  const torch::Tensor forward = gradient(kForwardOnly, &forward_loss);
  const torch::Tensor both = gradient(1.0, &both_loss);
  // Forward: the empty cell's push (its gradient relative to a matched cell) is what the
  // softmax's normalisation gives it, 1/B; with the reverse term it grows by log(0.1 / floor).
  const double forward_push = (forward[2] - forward[0]).item<double>();
  const double both_push = (both[2] - both[0]).item<double>();
  EXPECT_GT(forward_push, 0.0);
  EXPECT_GT(both_push, 5.0 * forward_push);
  EXPECT_GT(both_loss, forward_loss + 0.4);  // 0.1 log(0.1 / floor) dominates
  EXPECT_TRUE(std::isfinite(both_loss));
}

TEST(MarginalTargetTest, NoiseHasTheHistogramSensitivityScale) {
  // One 2-way block over 200,000 identical rows: the noised counts deviate from
  // (200000, 0) by e_0, e_1 ~ N(0, (z·√2)²). Projected to the total, the empty cell
  // keeps (e_0 − e_1) / 2 when that is positive: p1 = 1 − (e_0 − e_1) / 2N, of spread z / N.
  const int64_t n = 200000;
  torch::Tensor table = torch::zeros({n, 2});
  table.select(1, 1).fill_(1);
  table.select(1, 0).fill_(0);
  const double z = 1000;
  SecureRandom gen = SecureRandom::Derived("marginals", "noise", 7);
  std::vector<double> p1;
  for (int i = 0; i < 400; ++i) {
    auto target = MarginalTarget::FromTable(table, {{BlockKind::kSoftmax, 0, 2}},
                                            MarginalOptions{1}, z, &gen);
    ASSERT_TRUE(target.ok());
    p1.push_back(target->probabilities()[1].item<double>());
  }
  // P(e_0 > e_1) = 1/2: then p1 < 1.
  const double share_below_one =
      std::count_if(p1.begin(), p1.end(), [](double p) { return p < 1; }) / 400.0;
  EXPECT_NEAR(share_below_one, 0.5, 0.1);
  double spread = 0;
  for (double p : p1) spread = std::max(spread, 1 - p);
  // Largest deviation over 400 draws of a half-normal with std z/N = 0.005 (≈ 3 std).
  EXPECT_GT(spread, 0.0075);
  EXPECT_LT(spread, 0.03);
}

// Two declared bins plus a missing slot, then the within-bin position: with 4 parts per
// bin the histogram has 2·4 + 1 cells.
TEST(MarginalTargetTest, RefinesBinsByTheWithinBinPosition) {
  OutputBlock bins{BlockKind::kSoftmax, 0, 3};
  bins.position_offset = 3;
  bins.position_slots = 2;
  const std::vector<OutputBlock> blocks = {bins, {BlockKind::kTanh, 3, 1}};
  const torch::Tensor table = torch::tensor({{1.0, 0.0, 0.0, -0.75},  // bin 0, part 0
                                             {1.0, 0.0, 0.0, 0.9},    // bin 0, part 3
                                             {0.0, 1.0, 0.0, -0.1},   // bin 1, part 1
                                             {0.0, 0.0, 1.0, 0.0}},   // missing
                                            torch::kFloat32);
  auto target = MarginalTarget::FromTable(table, blocks, MarginalOptions{4}, 0, nullptr);
  ASSERT_TRUE(target.ok()) << target.status();
  const torch::Tensor expected =
      torch::tensor({0.25, 0.0, 0.0, 0.25, 0.0, 0.25, 0.0, 0.0, 0.25}, torch::kDouble);
  EXPECT_TRUE(torch::allclose(target->probabilities(), expected)) << target->probabilities();
  // Rows at the parts' centres are (nearly) their own soft histogram.
  const torch::Tensor centred = torch::tensor(
      {{1.0, 0.0, 0.0, -0.75}, {1.0, 0.0, 0.0, 0.75}, {0.0, 1.0, 0.0, -0.25}, {0.0, 0.0, 1.0, 0.0}},
      torch::kFloat32);
  EXPECT_LT(target->Loss(centred, kForwardOnly).item<double>(), 0.05);
  // Moving bin 0's second row to the bottom of the bin costs: the shape inside the bin counts.
  torch::Tensor moved = centred.clone();
  moved[1][3] = -0.75;
  EXPECT_GT(target->Loss(moved, kForwardOnly).item<double>(), 1.0);
  // The position gets a gradient (towards the upper part), not only the bins.
  moved.requires_grad_(true);
  target->Loss(moved, kForwardOnly).backward();
  EXPECT_NE(moved.grad()[1][3].item<double>(), 0.0);
  // One part per bin is the plain bins histogram.
  auto plain = MarginalTarget::FromTable(table, blocks, MarginalOptions{1}, 0, nullptr);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(
      torch::allclose(plain->probabilities(), torch::tensor({0.5, 0.25, 0.25}, torch::kDouble)));
}

// Blocks of 3 and 2 categories: a pair of 6 joint cells, selected when pair_cells >= 6.
TEST(MarginalTargetTest, PairsCarryTheJointHistogramOfTwoBlocks) {
  auto narrow = MarginalTarget::FromTable(Table(), Blocks(), MarginalOptions{1, 5}, 0, nullptr);
  ASSERT_TRUE(narrow.ok());
  EXPECT_EQ(narrow->pairs(), 0);
  auto target = MarginalTarget::FromTable(Table(), Blocks(), MarginalOptions{1, 6}, 0, nullptr);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->pairs(), 1);
  // Rows (block 1, block 2): (0,1), (0,1), (1,1), (2,0), row-major over block 1's category.
  const torch::Tensor joint = torch::tensor({0.0, 0.5, 0.0, 0.25, 0.25, 0.0}, torch::kDouble);
  ASSERT_EQ(target->probabilities().size(0), 5 + 6);
  EXPECT_TRUE(torch::allclose(target->probabilities().narrow(0, 5, 6), joint))
      << target->probabilities();
  EXPECT_NEAR(target->Loss(Table(), kForwardOnly).item<double>(), 0.0, 1e-6);
  // Rows with the right 1-way marginals but the pairing shuffled: only the pair's KL sees it.
  const torch::Tensor shuffled = torch::tensor({{1.0, 0.0, 0.0, 0.0, 1.0, 0.0},
                                                {1.0, 0.0, 0.0, 0.0, 0.0, 1.0},
                                                {0.0, 1.0, 0.0, 0.0, 0.0, 1.0},
                                                {0.0, 0.0, 1.0, 0.0, 0.0, 1.0}},
                                               torch::kFloat32);
  EXPECT_NEAR(narrow->Loss(shuffled, kForwardOnly).item<double>(), 0.0, 1e-6);
  EXPECT_GT(target->Loss(shuffled, kForwardOnly).item<double>(), 1.0);
  // The pair's gradient moves block 2's value of row 0 towards the target's pairing.
  torch::Tensor relaxed = shuffled.clone() * 0.8 + 0.1;
  relaxed.requires_grad_(true);
  target->Loss(relaxed, kForwardOnly).backward();
  EXPECT_LT(relaxed.grad()[0][5].item<double>(), relaxed.grad()[0][4].item<double>());
  // A saved draw must have the pair's cells too.
  EXPECT_FALSE(target->WithProbabilities(narrow->probabilities()).ok());
  EXPECT_TRUE(target->WithProbabilities(target->probabilities()).ok());
}

TEST(MarginalTargetTest, PairsShareTheReleaseNoise) {
  // Rows spread evenly over the 6 joint cells (10,000 each, far above the noise): with two
  // blocks and their pair, m = 3 histograms share the release, so every count gets noise of
  // std z·√(2m) = z·√6. A pair cell's probability then deviates from 1/6 by
  // (e − mean of its histogram's e) / n, of std z·√6·√(5/6) / n.
  const int64_t n = 60000;
  torch::Tensor table = torch::zeros({n, 6});
  for (int64_t r = 0; r < n; ++r) {
    table[r][r % 3] = 1;
    table[r][4 + (r / 3) % 2] = 1;
  }
  const double z = 100;
  SecureRandom gen = SecureRandom::Derived("marginals", "noise", 3);
  double sum_squares = 0;
  const int draws = 300;
  for (int i = 0; i < draws; ++i) {
    auto target = MarginalTarget::FromTable(table, Blocks(), MarginalOptions{1, 6}, z, &gen);
    ASSERT_TRUE(target.ok());
    sum_squares += std::pow((target->probabilities()[5].item<double>() - 1.0 / 6) * n, 2);
  }
  const double expected = z * std::sqrt(6.0) * std::sqrt(5.0 / 6);
  EXPECT_NEAR(std::sqrt(sum_squares / draws) / expected, 1.0, 0.15);
}

TEST(ProjectToTotalTest, IsTheNearestNonNegativeVectorWithTheTotal) {
  auto project = [](std::vector<double> counts, double total) {
    return ProjectToTotal(torch::tensor(counts, torch::kDouble), total);
  };
  // Already a histogram of the total: unchanged, zeros included.
  EXPECT_TRUE(
      torch::allclose(project({3, 0, 1}, 4), torch::tensor({3.0, 0.0, 1.0}, torch::kDouble)));
  // Noise-only cells go to 0 instead of keeping their positive noise: τ = 1.
  EXPECT_TRUE(
      torch::allclose(project({5, 1, -2}, 4), torch::tensor({4.0, 0.0, 0.0}, torch::kDouble)));
  // An even shift when every cell stays positive: τ = 1.
  EXPECT_TRUE(
      torch::allclose(project({3, 3, 3}, 6), torch::tensor({2.0, 2.0, 2.0}, torch::kDouble)));
  // Too little mass: shifted up (τ = −1); the negative cell stays at 0.
  EXPECT_TRUE(
      torch::allclose(project({2, 1, -5}, 5), torch::tensor({3.0, 2.0, 0.0}, torch::kDouble)));
  // Random vectors: non-negative, the right total, and no farther than clipping-and-scaling.
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(5);
  for (int i = 0; i < 20; ++i) {
    const torch::Tensor counts = torch::randn({12}, gen, torch::kDouble) * 10 + 5;
    const torch::Tensor projected = ProjectToTotal(counts, 60);
    EXPECT_GE(projected.min().item<double>(), 0);
    EXPECT_NEAR(projected.sum().item<double>(), 60, 1e-9);
    const torch::Tensor clipped = counts.clamp_min(0);
    const torch::Tensor scaled = clipped * (60 / clipped.sum().item<double>());
    EXPECT_LE((projected - counts).norm().item<double>(),
              (scaled - counts).norm().item<double>() + 1e-9);
  }
}

TEST(MarginalTargetTest, RejectsBadInput) {
  EXPECT_FALSE(
      MarginalTarget::FromTable(torch::zeros({0, 6}), Blocks(), MarginalOptions{1}, 0, nullptr)
          .ok());
  EXPECT_FALSE(
      MarginalTarget::FromTable(torch::zeros({4, 5}), Blocks(), MarginalOptions{1}, 0, nullptr)
          .ok());
  SecureRandom noise = SecureRandom::Derived("marginals", "noise", 1);
  EXPECT_FALSE(MarginalTarget::FromTable(Table(), Blocks(), MarginalOptions{1}, 0, &noise).ok());
  EXPECT_FALSE(
      MarginalTarget::FromTable(Table(), Blocks(), MarginalOptions{1, -1}, 0, nullptr).ok());
  auto target = MarginalTarget::FromTable(Table(), Blocks(), MarginalOptions{1}, 0, nullptr);
  ASSERT_TRUE(target.ok());
  EXPECT_FALSE(
      target->WithProbabilities(torch::ones({5}, torch::kDouble)).ok());  // not summing to 1
  EXPECT_FALSE(target->WithProbabilities(torch::ones({4}, torch::kDouble)).ok());  // wrong width
  auto same = target->WithProbabilities(target->probabilities());
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(torch::equal(same->probabilities(), target->probabilities()));
}

}  // namespace
}  // namespace vfsynth

namespace vfsynth {
namespace {

// The two one-hot blocks of SmallTable, their 1-way histograms and their pair.
MarginalTarget PairShape() {
  auto shape = MarginalTarget::OfHistograms(OneHotBlocks(Blocks()), {{0, 1}}, 1);
  EXPECT_TRUE(shape.ok()) << shape.status();
  return *shape;
}

TEST(ConsistentCountsTest, LeavesExactCountsAsTheyAre) {
  const MarginalTarget shape = PairShape();
  const torch::Tensor all = shape.TableProbabilities(Table()) * 4.0;
  std::vector<torch::Tensor> counts = {all.narrow(0, 0, 3), all.narrow(0, 3, 2),
                                       all.narrow(0, 5, 6)};
  const auto out = shape.ConsistentCounts(counts, {1.0, 1.0, 1.0}, 4.0, 3);
  for (size_t k = 0; k < counts.size(); ++k) {
    EXPECT_TRUE(torch::allclose(out[k], counts[k])) << k << ": " << out[k];
  }
}

TEST(ConsistentCountsTest, MarginsAgreeAndFollowThePreciseHistogram) {
  const MarginalTarget shape = PairShape();
  // Block 0's 1-way histogram is nearly exact; the pair's margin of block 0 is off.
  const torch::Tensor one_way_a = torch::tensor({50.0, 30.0, 20.0}, torch::kDouble);
  const torch::Tensor one_way_b = torch::tensor({40.0, 60.0}, torch::kDouble);
  const torch::Tensor pair =
      torch::tensor({30.0, 10.0, 5.0, 35.0, 5.0, 15.0}, torch::kDouble);  // a: 40, 40, 20
  const auto out = shape.ConsistentCounts({one_way_a, one_way_b, pair}, {1e-6, 1.0, 1.0}, 100.0, 2);
  const torch::Tensor table = out[2].reshape({3, 2});
  EXPECT_TRUE(torch::allclose(table.sum(1), out[0], 1e-6, 1e-3)) << table;
  EXPECT_TRUE(torch::allclose(table.sum(0), out[1], 1e-6, 1e-3)) << table;
  EXPECT_TRUE(torch::allclose(out[0], one_way_a, 1e-6, 1e-3)) << out[0];
  // Block 1: the 1-way histogram and the pair's margin (40, 60) already agree.
  EXPECT_TRUE(torch::allclose(out[1], one_way_b, 1e-6, 1e-3)) << out[1];
  for (const torch::Tensor& c : out) {
    EXPECT_GE(c.min().item<double>(), 0.0);
    EXPECT_NEAR(c.sum().item<double>(), 100.0, 1e-6);
  }
}

TEST(ConsistentCountsTest, ProjectsNegativeCountsAway) {
  const MarginalTarget shape = PairShape();
  const auto out = shape.ConsistentCounts(
      {torch::tensor({-5.0, 3.0, 6.0}, torch::kDouble), torch::tensor({2.0, 2.0}, torch::kDouble),
       torch::tensor({-1.0, 1.0, 2.0, 0.0, 0.5, 1.5}, torch::kDouble)},
      {1.0, 1.0, 1.0}, 4.0, 3);
  for (const torch::Tensor& c : out) {
    EXPECT_GE(c.min().item<double>(), 0.0) << c;
    EXPECT_NEAR(c.sum().item<double>(), 4.0, 1e-9) << c;
  }
}

TEST(OfHistogramsTest, UnmergedPairsKeepEveryBin) {
  // A block of 4 bins (position column after it) and a 2-way block.
  const std::vector<OutputBlock> blocks = {{BlockKind::kSoftmax, 0, 4, 4, 4},
                                           {BlockKind::kSoftmax, 5, 2}};
  auto merged = MarginalTarget::OfHistograms(blocks, {{0, 1}}, 1, {2, 0});
  auto unmerged = MarginalTarget::OfHistograms(blocks, {{0, 1}}, 1, {2, 0}, {true});
  ASSERT_TRUE(merged.ok() && unmerged.ok());
  EXPECT_EQ(merged->HistogramSizes(), (std::vector<int64_t>{4, 2, 4}));
  EXPECT_EQ(unmerged->HistogramSizes(), (std::vector<int64_t>{4, 2, 8}));
}

}  // namespace
}  // namespace vfsynth
