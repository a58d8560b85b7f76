#include "common/marginals/party_measurement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/gan/marginal_target.h"
#include "common/secure/cross_counts.h"
#include "tests/unit/secure/test_keys.h"

namespace vfsynth::marginals {
namespace {

// Two parties: hospital holds columns 0 (3 values) and 1 (4), insurer 2 (2) and 3 (5).
// Measured: every 1-way histogram, hospital's own pair (0, 1), and the cross pairs (0, 2)
// at σ 1 and (1, 3) at σ 2; (0, 3) and (1, 2) are not measured.
v1::PrivacyPlan TwoPartyPlan() {
  v1::PrivacyPlan plan;
  const int widths[4] = {3, 4, 2, 5};
  for (int c = 0; c < 4; ++c) {
    v1::PlannedColumn* column = plan.add_columns();
    column->set_party(c < 2 ? 0 : 1);
    column->set_name(absl::StrCat("c", c));
    column->set_width(widths[c]);
    column->set_cells(widths[c]);
    column->set_pair_width(widths[c]);
  }
  plan.mutable_privacy()->mutable_measurement()->set_position_bins(1);
  plan.mutable_privacy()->mutable_measurement()->set_pair_bins(8);
  auto add = [&](std::vector<int> columns, bool cross, double sigma) {
    v1::MeasuredHistogram* m = plan.add_measurements();
    int64_t cells = 1;
    for (const int c : columns) {
      m->add_columns(c);
      cells *= widths[c];
    }
    m->set_cells(cells);
    m->set_cross_party(cross);
    m->set_sigma(sigma);
  };
  for (int c = 0; c < 4; ++c) add({c}, false, 3);
  add({0, 1}, false, 3);
  add({0, 2}, true, 1);
  add({1, 3}, true, 2);
  plan.set_records(120);
  return plan;
}

// One-hot rows of random values for blocks of `widths`, and the blocks.
torch::Tensor OneHotTable(const std::vector<int>& widths, int rows,
                          std::vector<OutputBlock>* blocks) {
  torch::manual_seed(7);
  std::vector<torch::Tensor> parts;
  int offset = 0;
  for (const int w : widths) {
    parts.push_back(torch::one_hot(torch::randint(w, {rows}, torch::kLong), w).to(torch::kFloat));
    blocks->push_back({BlockKind::kSoftmax, offset, w});
    offset += w;
  }
  return torch::cat(parts, 1);
}

TEST(PartyMeasurementTest, CrossPairsListEachPartysColumnsOnce) {
  const std::vector<CrossPair> pairs = CrossPairsOf(TwoPartyPlan());
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].low, 0);
  EXPECT_EQ(pairs[0].high, 1);
  EXPECT_EQ(pairs[0].low_columns, (std::vector<int>{0, 1}));
  EXPECT_EQ(pairs[0].high_columns, (std::vector<int>{2, 3}));
  EXPECT_EQ(pairs[0].histograms, (std::vector<int>{5, 6}));
}

TEST(PartyMeasurementTest, SlotSigmasAreEachHistogramsAndMaskTheUnmeasuredPairs) {
  const v1::PrivacyPlan plan = TwoPartyPlan();
  const CrossPair pair = CrossPairsOf(plan)[0];
  auto layout = LowLayout(plan, pair, 2048);
  ASSERT_TRUE(layout.ok()) << layout.status();
  // Slots 0-2: column 0, slots 3-6: column 1.
  EXPECT_EQ(SlotSigmas(plan, pair, *layout, 2, false),
            (std::vector<double>{1, 1, 1, -1, -1, -1, -1}));
  EXPECT_EQ(SlotSigmas(plan, pair, *layout, 3, false),
            (std::vector<double>{-1, -1, -1, 2, 2, 2, 2}));
  EXPECT_EQ(SlotSigmas(plan, pair, *layout, 3, true),
            (std::vector<double>{-1, -1, -1, 0, 0, 0, 0}));
}

TEST(PartyMeasurementTest, NoiselessSecureCountsEqualTheJointTablesPairCounts) {
  const v1::PrivacyPlan plan = TwoPartyPlan();
  const CrossPair pair = CrossPairsOf(plan)[0];
  std::vector<OutputBlock> low_blocks, high_blocks;
  const torch::Tensor low = OneHotTable({3, 4}, 120, &low_blocks);
  const torch::Tensor high = OneHotTable({2, 5}, 120, &high_blocks);
  const secure::PaillierPrivateKey& key = secure::testing::TestKey();
  auto layout = LowLayout(plan, pair, key.public_key().modulus_bits());
  ASSERT_TRUE(layout.ok()) << layout.status();
  const v1::MeasurementConfig& settings = plan.privacy().measurement();
  auto records = secure::EncryptRecords(
      key, *layout,
      {PairCells(low, low_blocks[0], settings), PairCells(low, low_blocks[1], settings)}, 1);
  ASSERT_TRUE(records.ok()) << records.status();
  SecureRandom rng = SecureRandom::FromKey(SecureRandom::Key{});
  std::vector<secure::CrossCounts> by_column;
  for (int j = 0; j < 2; ++j) {
    const std::vector<double> sigmas = SlotSigmas(plan, pair, *layout, 2 + j, true);
    auto sums = secure::SumByValue(key.public_key(), *layout, *records,
                                   PairCells(high, high_blocks[j], settings), high_blocks[j].width,
                                   sigmas, rng);
    ASSERT_TRUE(sums.ok()) << sums.status();
    auto counts =
        secure::DecryptCounts(key, *layout, *sums, high_blocks[j].width, 120, sigmas, rng);
    ASSERT_TRUE(counts.ok()) << counts.status();
    by_column.push_back(*counts);
  }
  auto counts = CrossHistogramCounts(plan, pair, *layout, by_column);
  ASSERT_TRUE(counts.ok()) << counts.status();
  // The same pairs of the joint table, counted in the clear.
  std::vector<OutputBlock> joint_blocks = low_blocks;
  for (OutputBlock block : high_blocks) {
    block.offset += 7;
    joint_blocks.push_back(block);
  }
  auto shape = MarginalTarget::OfHistograms(joint_blocks, {{0, 2}, {1, 3}}, 1);
  ASSERT_TRUE(shape.ok()) << shape.status();
  const torch::Tensor exact =
      (shape->TableProbabilities(torch::cat({low, high}, 1)) * 120).round().to(torch::kLong);
  const int64_t one_way = 3 + 4 + 2 + 5;
  const torch::Tensor pairs = exact.narrow(0, one_way, exact.numel() - one_way).contiguous();
  EXPECT_EQ(*counts, std::vector<int64_t>(pairs.data_ptr<int64_t>(),
                                          pairs.data_ptr<int64_t>() + pairs.numel()));
}

TEST(PartyMeasurementTest, OwnCountsAreTheExactHistogramsWithoutNoiseAndRefuseOthersColumns) {
  const v1::PrivacyPlan plan = TwoPartyPlan();
  MeasuredLayout own;
  const torch::Tensor table = OneHotTable({3, 4}, 120, &own.blocks);
  auto counts = OwnCounts(table, own, 0, plan, {0, 1, 4}, nullptr);
  ASSERT_TRUE(counts.ok()) << counts.status();
  ASSERT_EQ(counts->size(), 3u + 4 + 12);
  int64_t total = 0;
  for (size_t i = 0; i < 3; ++i) total += (*counts)[i];
  EXPECT_EQ(total, 120);
  const torch::Tensor pair = table.narrow(1, 0, 3).t().mm(table.narrow(1, 3, 4)).reshape({-1});
  for (int64_t cell = 0; cell < 12; ++cell) {
    EXPECT_EQ((*counts)[7 + cell], static_cast<int64_t>(pair[cell].item<float>()));
  }
  EXPECT_THAT(OwnCounts(table, own, 0, plan, {5}, nullptr).status().message(),
              ::testing::HasSubstr("counts column 2, which this party does not hold"));
  EXPECT_THAT(OwnCounts(table, own, 0, plan, {9}, nullptr).status().message(),
              ::testing::HasSubstr("histogram 9 is not in the plan"));
}

}  // namespace
}  // namespace vfsynth::marginals
