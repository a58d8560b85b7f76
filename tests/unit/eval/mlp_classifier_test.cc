// The eval MLP is seeded by its options alone: the process-wide LibTorch generator
// is neither read nor advanced by Fit.
#include "common/eval/mlp_classifier.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace vfsynth {
namespace {

FeatureMatrix Features(int64_t rows) {
  FeatureMatrix x;
  x.rows = rows;
  x.cols = 3;
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < 3; ++c)
      x.values.push_back(static_cast<float>((r * (c + 3) + c) % 7) / 7.0f);
  }
  return x;
}

TEST(MlpClassifierTest, IsSeededOnItsOwnAndLeavesTheGlobalGeneratorAlone) {
  const FeatureMatrix x = Features(300);
  std::vector<int> y;
  for (int64_t r = 0; r < x.rows; ++r)
    y.push_back(x.values[r * 3] + x.values[r * 3 + 1] > 0.8f ? 1 : 0);
  MlpOptions options;
  options.epochs = 2;
  torch::manual_seed(5);
  const torch::Tensor untouched = torch::rand({4});
  torch::manual_seed(5);
  MlpClassifier first(options), second(options);
  ASSERT_TRUE(first.Fit(x, y, 2).ok());
  EXPECT_TRUE(torch::equal(torch::rand({4}), untouched));  // Fit drew nothing from it
  torch::manual_seed(6);  // and another global state changes nothing
  ASSERT_TRUE(second.Fit(x, y, 2).ok());
  auto p1 = first.PredictProba(x), p2 = second.PredictProba(x);
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(*p1, *p2);
}

}  // namespace
}  // namespace vfsynth
