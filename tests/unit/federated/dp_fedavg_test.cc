// DP-FedAvg's pieces: clipping, the party's noised clipped sum (its exact sum without
// noise, its noise's standard deviation z·C), and the curator's averaged step.
#include "common/federated/dp_fedavg.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vfsynth {
namespace {

TEST(DpFedAvgTest, ClippingShortensOnlyLongUpdates) {
  SecureRandom noise = SecureRandom::Derived("dp-fedavg", "noise", 0);
  auto clipped = NoisedClippedSum({torch::tensor({3.0f, 4.0f})}, 2, /*clip_norm=*/1.0, 0.0, noise);
  ASSERT_TRUE(clipped.ok()) << clipped.status();
  EXPECT_TRUE(torch::allclose(*clipped, torch::tensor({0.6f, 0.8f})));
  auto kept = NoisedClippedSum({torch::tensor({3.0f, 4.0f})}, 2, /*clip_norm=*/10.0, 0.0, noise);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(torch::equal(*kept, torch::tensor({3.0f, 4.0f})));
}

TEST(DpFedAvgTest, WithoutNoiseTheReleaseIsTheSumOfClippedUpdates) {
  SecureRandom noise = SecureRandom::Derived("dp-fedavg", "noise", 1);
  auto sum = NoisedClippedSum({torch::tensor({3.0f, 4.0f}), torch::tensor({0.1f, 0.2f})}, 2, 1.0, 0.0, noise);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_TRUE(torch::allclose(*sum, torch::tensor({0.7f, 1.0f})));
  // One user replaced by any other moves the sum by at most 2C.
  auto other = NoisedClippedSum({torch::tensor({-30.0f, -40.0f}), torch::tensor({0.1f, 0.2f})}, 2, 1.0, 0.0, noise);
  ASSERT_TRUE(other.ok());
  EXPECT_LE((*sum - *other).norm().item<double>(), 2.0 + 1e-6);
  // One user removed (the accountant's adjacency under Poisson sampling) moves it by at most C.
  auto without = NoisedClippedSum({torch::tensor({0.1f, 0.2f})}, 2, 1.0, 0.0, noise);
  ASSERT_TRUE(without.ok());
  EXPECT_LE((*sum - *without).norm().item<double>(), 1.0 + 1e-6);
}

TEST(DpFedAvgTest, TheNoiseHasStandardDeviationZTimesC) {
  SecureRandom noise = SecureRandom::Derived("dp-fedavg", "noise", 2);
  constexpr int64_t kDim = 200000;
  auto sum = NoisedClippedSum({}, kDim, /*clip_norm=*/0.5, /*noise_multiplier=*/1.5, noise);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_NEAR(sum->mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(sum->std().item<double>(), 1.5 * 0.5, 0.01);
}

TEST(DpFedAvgTest, TheCuratorAveragesOverTheExpectedUsers) {
  auto step = FedAvgStep({torch::tensor({1.0f, 2.0f}), torch::tensor({3.0f, -2.0f})}, /*users_asked=*/4, 0.5);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_TRUE(torch::allclose(*step, torch::tensor({0.5f, 0.0f})));
}

TEST(DpFedAvgTest, BadInputIsRefused) {
  SecureRandom noise = SecureRandom::Derived("dp-fedavg", "noise", 3);
  const std::vector<torch::Tensor> one = {torch::zeros({2})};
  EXPECT_EQ(NoisedClippedSum(one, 2, 0.0, 1.0, noise).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NoisedClippedSum(one, 2, 1.0, -1.0, noise).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NoisedClippedSum(one, 3, 1.0, 1.0, noise).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NoisedClippedSum({torch::zeros({1, 2})}, 2, 1.0, 1.0, noise).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FedAvgStep({}, 1, 1.0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FedAvgStep(one, 0, 1.0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FedAvgStep({torch::zeros({2}), torch::zeros({3})}, 1, 1.0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vfsynth
