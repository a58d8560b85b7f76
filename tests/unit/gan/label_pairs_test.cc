// Label pairs: the randomized labels' keep probability, the tables, and the curator's
// target that undoes the labels' confusion.
#include "common/gan/label_pairs.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/random/secure_random.h"
#include "tests/unit/data/encoder_from_json.h"

namespace vfsynth {
namespace {

TEST(LabelPairsTest, KeepProbabilityIsRandomizedResponses) {
  // e^ε / (e^ε + k − 1): ln 3 keeps a binary label with probability 3/4, and a label
  // of 4 categories with 1/2.
  EXPECT_NEAR(LabelKeepProbability(std::log(3.0), 2), 0.75, 1e-12);
  EXPECT_NEAR(LabelKeepProbability(std::log(3.0), 4), 0.5, 1e-12);
  EXPECT_NEAR(LabelKeepProbability(1e-12, 4), 0.25, 1e-9);  // no information: uniform
  EXPECT_NEAR(LabelKeepProbability(800.0, 5), 1.0, 1e-12);  // no overflow
  EXPECT_EQ(LabelKeepProbability(1.0, 1), 1.0);
}

TEST(LabelPairsTest, RandomizedLabelsKeepTheirLabelAsOftenAsComputedAndSpreadTheRestEvenly) {
  const int64_t rows = 200000;
  const int k = 4;
  at::Generator draw = at::make_generator<at::CPUGeneratorImpl>(7);
  SecureRandom noise = SecureRandom::Derived("labels", "noise", 7);
  const torch::Tensor truth = torch::randint(k, {rows}, draw, torch::kLong);
  const torch::Tensor one_hot = torch::one_hot(truth, k).to(torch::kFloat32);
  for (const double epsilon : {0.5, 2.0}) {
    const torch::Tensor released = RandomizedLabels(one_hot, epsilon, noise);
    ASSERT_EQ(released.size(0), rows);
    const double expected = LabelKeepProbability(epsilon, k);
    const double kept = released.eq(truth).to(torch::kDouble).mean().item<double>();
    EXPECT_NEAR(kept, expected, 4 * std::sqrt(expected * (1 - expected) / rows)) << epsilon;
    // Of the rows whose true label is 0, each other category gets (1 − keep)/(k − 1).
    const torch::Tensor from_zero = released.masked_select(truth.eq(0));
    const double n = static_cast<double>(from_zero.numel());
    for (int c = 1; c < k; ++c) {
      const double share = from_zero.eq(c).to(torch::kDouble).mean().item<double>();
      const double other = (1 - expected) / (k - 1);
      EXPECT_NEAR(share, other, 4 * std::sqrt(other * (1 - other) / n)) << epsilon << " " << c;
    }
  }
}

TEST(LabelPairsTest, CountsAreTheLabelByCellTablesAndCheckTheirInput) {
  // Rows: (label, b) = (0, x), (1, y), (1, y), (0, y); b one-hot at columns 1-2.
  const torch::Tensor table =
      torch::tensor({{9.0, 1.0, 0.0}, {9.0, 0.0, 1.0}, {9.0, 0.0, 1.0}, {9.0, 0.0, 1.0}});
  const torch::Tensor labels = torch::tensor({0, 1, 1, 0}, torch::kLong);
  const std::vector<OutputBlock> blocks = {{BlockKind::kSoftmax, 1, 2}};
  auto counts = LabelPairCounts(labels, 2, table, blocks, 0, nullptr);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_TRUE(torch::equal(*counts, torch::tensor({1.0, 1.0, 0.0, 2.0}, torch::kDouble)));
  EXPECT_EQ(LabelPairCells(2, blocks), 4);
  EXPECT_FALSE(
      LabelPairCounts(torch::tensor({0, 2, 1, 0}, torch::kLong), 2, table, blocks, 0, nullptr)
          .ok());
  EXPECT_FALSE(
      LabelPairCounts(torch::tensor({0, 1}, torch::kLong), 2, table, blocks, 0, nullptr).ok());
  auto nothing =
      LabelPairCounts(labels, 2, table, {}, 0, nullptr);  // a party of scalar columns only
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_EQ(nothing->numel(), 0);
  SecureRandom noise = SecureRandom::Derived("label-pairs", "noise", 1);
  EXPECT_FALSE(LabelPairCounts(labels, 2, table, blocks, 0, &noise).ok());  // noise needs z > 0
  // Noise of std z·√(2m) per count (m = 1 block here).
  const torch::Tensor big = torch::zeros({1, 3});
  double sum_sq = 0;
  const int draws = 4000;
  for (int i = 0; i < draws; ++i) {
    auto noised = LabelPairCounts(torch::tensor({0}, torch::kLong), 2, big, blocks, 2.0, &noise);
    ASSERT_TRUE(noised.ok());
    sum_sq += noised->pow(2).sum().item<double>();
  }
  EXPECT_NEAR(std::sqrt(sum_sq / (draws * 4)), 2.0 * std::sqrt(2.0), 0.1);
}

TEST(LabelPairsTest, TargetUndoesTheLabelsConfusion) {
  // Party 0 holds a 3-way label y; party 1 a 4-way b that depends strongly on it.
  TableEncoder holder = EncoderFromJson(
      R"({"columns":[{"name":"y","type":"categorical","categories":["p","q","r"]}]})");
  TableEncoder other = EncoderFromJson(
      R"({"columns":[{"name":"b","type":"categorical","categories":["s","t","u","v"]},
      {"name":"w","type":"continuous","min":0,"max":1}]})");
  const int64_t rows = 300000;
  at::Generator draw = at::make_generator<at::CPUGeneratorImpl>(3);
  const torch::Tensor y = torch::randint(3, {rows}, draw, torch::kLong);
  // b = y with probability 0.7, else uniform over the 4 values.
  const torch::Tensor copy = torch::rand({rows}, draw) < 0.7;
  const torch::Tensor b = torch::where(copy, y, torch::randint(4, {rows}, draw, torch::kLong));
  const torch::Tensor table =
      torch::cat({torch::one_hot(b, 4), torch::zeros({rows, 1}, torch::kLong)}, 1)
          .to(torch::kFloat32);
  const double epsilon = 1.0;
  auto label = holder.CategoricalBlock("y");
  ASSERT_TRUE(label.ok());
  SecureRandom noise = SecureRandom::Derived("labels", "noise", 3);
  const torch::Tensor released = RandomizedLabels(torch::one_hot(y, 3), epsilon, noise);
  auto counts = LabelPairCounts(released, 3, table, OneHotBlocks(other.blocks()), 0, nullptr);
  ASSERT_TRUE(counts.ok()) << counts.status();
  auto target =
      LabelPairTarget({&holder, &other}, 0, *label, {torch::zeros({0}), *counts}, epsilon, rows);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->pairs(), 1);
  const torch::Tensor truth =
      (torch::one_hot(y, 3).to(torch::kDouble).t().mm(torch::one_hot(b, 4).to(torch::kDouble)) /
       rows)
          .reshape({-1});
  EXPECT_LT((target->probabilities() - truth).abs().max().item<double>(), 0.01);
  // The confused table itself is far off: the inversion is what makes it right.
  EXPECT_GT((*counts / rows - truth).abs().max().item<double>(), 0.05);
  // G's joint output puts party 1's slice after the holder's 3 columns: a batch of the
  // true rows scores (almost) nothing.
  const torch::Tensor batch = torch::cat({torch::one_hot(y, 3).to(torch::kFloat32), table}, 1);
  EXPECT_LT(target->Loss(batch, 1.0).item<double>(), 1e-3);
}

TEST(LabelPairsTest, TargetRefusesWrongReleases) {
  TableEncoder holder =
      EncoderFromJson(R"({"columns":[{"name":"y","type":"categorical","categories":["p","q"]}]})");
  TableEncoder other =
      EncoderFromJson(R"({"columns":[{"name":"b","type":"categorical","categories":["s","t"]}]})");
  const OutputBlock label = *holder.CategoricalBlock("y");
  EXPECT_FALSE(
      LabelPairTarget({&holder, &other}, 0, label, {torch::zeros({0}), torch::ones({3})}, 1.0, 10)
          .ok());
  EXPECT_FALSE(LabelPairTarget({&holder, &other}, 0, label,
                               {torch::zeros({0}), torch::full({4}, NAN)}, 1.0, 10)
                   .ok());
  EXPECT_FALSE(
      LabelPairTarget({&holder, &other}, 2, label, {torch::zeros({0}), torch::ones({4})}, 1.0, 10)
          .ok());
  // So small an ε that nothing of the labels is left.
  EXPECT_FALSE(
      LabelPairTarget({&holder, &other}, 0, label, {torch::zeros({0}), torch::ones({4})}, 1e-12, 10)
          .ok());
  EXPECT_TRUE(
      LabelPairTarget({&holder, &other}, 0, label, {torch::zeros({0}), torch::ones({4})}, 1.0, 10)
          .ok());
}

TEST(LabelPairsTest, DigestDependsOnEveryLabel) {
  EXPECT_EQ(LabelsDigest({0, 1, 2}), LabelsDigest({0, 1, 2}));
  EXPECT_NE(LabelsDigest({0, 1, 2}), LabelsDigest({0, 2, 1}));
  EXPECT_NE(LabelsDigest({0, 1}), LabelsDigest({0, 1, 0}));
  EXPECT_EQ(LabelsDigest({}).size(), 64u);
}

}  // namespace
}  // namespace vfsynth
