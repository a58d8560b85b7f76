// Tensors drawn from the cryptographic stream, and the parties' shared real batches.
#include "common/random/random_tensors.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "common/gan/batch_sampler.h"

namespace vfsynth {
namespace {

std::vector<int64_t> Values(const torch::Tensor& t) {
  EXPECT_EQ(t.dtype(), torch::kLong);
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

std::vector<int64_t> Draw(int64_t rows, int64_t batch, uint64_t counter) {
  SecureRandom stream = SecureRandom::Derived("secret", "test", counter);
  return Values(SampleWithoutReplacement(rows, batch, stream));
}

TEST(SampleWithoutReplacementTest, DrawsDistinctRowsInRangeAndRepeatsForTheSameStream) {
  const std::vector<int64_t> batch = Draw(26048, 256, 7);
  ASSERT_EQ(batch.size(), 256u);
  const std::set<int64_t> distinct(batch.begin(), batch.end());
  EXPECT_EQ(distinct.size(), 256u);
  EXPECT_GE(*distinct.begin(), 0);
  EXPECT_LT(*distinct.rbegin(), 26048);
  EXPECT_EQ(Draw(26048, 256, 7), batch);  // every party draws the same rows
  EXPECT_NE(Draw(26048, 256, 8), batch);  // the next step draws others
}

TEST(SampleWithoutReplacementTest, AFullBatchIsAPermutation) {
  const std::vector<int64_t> all = Draw(50, 50, 1);
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 50u);
  EXPECT_TRUE(Draw(50, 0, 1).empty());
}

TEST(SampleWithoutReplacementTest, EveryOrderedBatchIsEquallyLikely) {
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

TEST(SampleWithoutReplacementTest, RefusesMoreRowsThanThereAre) {
  SecureRandom stream = SecureRandom::Derived("secret", "test", 0);
  EXPECT_THROW(SampleWithoutReplacement(3, 4, stream), c10::Error);
  EXPECT_THROW(SampleWithoutReplacement(3, -1, stream), c10::Error);
}

TEST(RealBatchIndicesTest, AreTheSecretsStreamAndChangeWithIt) {
  const std::vector<int64_t> batch = Values(RealBatchIndices("the-shared-secret", 1000, 32, 4));
  EXPECT_EQ(batch,
            Values(RealBatchIndices("the-shared-secret", 1000, 32, 4)));  // every party agrees
  SecureRandom stream = SecureRandom::Derived("the-shared-secret", "real-batch", 4);
  EXPECT_EQ(batch, Values(SampleWithoutReplacement(1000, 32, stream)));
  EXPECT_NE(batch, Values(RealBatchIndices("another-secret-entirely", 1000, 32, 4)));
}

TEST(RandomTensorsTest, PermutationsAndIntegersCoverTheirRange) {
  SecureRandom stream = SecureRandom::Derived("k", "perm", 0);
  const std::vector<int64_t> perm = Values(RandomPermutation(stream, 100));
  EXPECT_EQ(std::set<int64_t>(perm.begin(), perm.end()).size(), 100u);
  EXPECT_NE(perm, Values(torch::arange(100, torch::kLong)));
  const std::vector<int64_t> ints = Values(UniformIntegers(stream, 3, 6, 3000));
  EXPECT_EQ(std::set<int64_t>(ints.begin(), ints.end()), (std::set<int64_t>{3, 4, 5}));
  EXPECT_THROW(UniformIntegers(stream, 3, 3, 1), c10::Error);
}

TEST(RandomTensorsTest, GaussianTensorsAreDrawnInDoubleThenCast) {
  SecureRandom a = SecureRandom::Derived("k", "gauss", 0);
  SecureRandom b = SecureRandom::Derived("k", "gauss", 0);
  const torch::Tensor wide = GaussianTensor(a, {400, 300}, 2.5);
  const torch::Tensor narrow = GaussianTensor(b, {400, 300}, 2.5, torch::kFloat32);
  EXPECT_EQ(wide.dtype(), torch::kDouble);
  EXPECT_EQ(narrow.dtype(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(wide.to(torch::kFloat32), narrow));
  EXPECT_NEAR(wide.std().item<double>(), 2.5, 0.02);
  EXPECT_NEAR(wide.mean().item<double>(), 0.0, 0.02);
  const torch::Tensor u = UniformTensor(a, {10000});
  EXPECT_GT(u.min().item<double>(), 0.0);
  EXPECT_LT(u.max().item<double>(), 1.0);
}

}  // namespace
}  // namespace vfsynth
