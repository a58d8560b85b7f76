#include "common/model/batch_sampler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

#include "common/model/networks.h"

namespace vfsynth {
namespace {

std::vector<int64_t> Draw(int64_t rows, int64_t batch, uint64_t counter) {
  const torch::Tensor t = SampleWithoutReplacement(rows, batch, StreamGenerator("secret", "test", counter));
  EXPECT_EQ(t.dtype(), torch::kLong);
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

TEST(BatchSamplerTest, DrawsDistinctRowsInRangeAndRepeatsForTheSameStream) {
  const std::vector<int64_t> batch = Draw(26048, 256, 7);
  ASSERT_EQ(batch.size(), 256u);
  const std::set<int64_t> distinct(batch.begin(), batch.end());
  EXPECT_EQ(distinct.size(), 256u);
  EXPECT_GE(*distinct.begin(), 0);
  EXPECT_LT(*distinct.rbegin(), 26048);
  EXPECT_EQ(Draw(26048, 256, 7), batch);   // every party draws the same rows
  EXPECT_NE(Draw(26048, 256, 8), batch);   // the next step draws others
}

TEST(BatchSamplerTest, AFullBatchIsAPermutation) {
  const std::vector<int64_t> all = Draw(50, 50, 1);
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 50u);
  EXPECT_TRUE(Draw(50, 0, 1).empty());
}

TEST(BatchSamplerTest, EveryOrderedBatchIsEquallyLikely) {
  // 5 rows, batches of 2: 20 ordered pairs, each with probability 1/20.
  constexpr int kDraws = 40000;
  std::map<std::pair<int64_t, int64_t>, int> counts;
  for (int i = 0; i < kDraws; ++i) {
    const std::vector<int64_t> b = Draw(5, 2, static_cast<uint64_t>(i));
    ++counts[{b[0], b[1]}];
  }
  ASSERT_EQ(counts.size(), 20u);
  // Chi-square with 19 degrees of freedom: 43.8 is its 0.999 quantile.
  const double expected = kDraws / 20.0;
  double chi2 = 0;
  for (const auto& [pair, n] : counts) chi2 += (n - expected) * (n - expected) / expected;
  EXPECT_LT(chi2, 43.8);
}

TEST(BatchSamplerTest, RefusesMoreRowsThanThereAre) {
  EXPECT_THROW(SampleWithoutReplacement(3, 4, StreamGenerator("secret", "test", 0)), c10::Error);
  EXPECT_THROW(SampleWithoutReplacement(3, -1, StreamGenerator("secret", "test", 0)), c10::Error);
}

}  // namespace
}  // namespace vfsynth
