// DP-FedAvg's pieces: clipping, the party's noised clipped sum (its exact sum without
// noise, its noise's standard deviation z·2C), the plan's ε for replace-one neighbours,
// the curator's average and its FedAdam step.
#include "common/federated/dp_fedavg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/config/config.h"
#include "common/privacy/accountant.h"
#include "common/privacy/privacy_plan.h"

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
  auto sum = NoisedClippedSum({torch::tensor({3.0f, 4.0f}), torch::tensor({0.1f, 0.2f})}, 2, 1.0,
                              0.0, noise);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_TRUE(torch::allclose(*sum, torch::tensor({0.7f, 1.0f})));
  // One user replaced by any other moves the sum by at most 2C.
  auto other = NoisedClippedSum({torch::tensor({-30.0f, -40.0f}), torch::tensor({0.1f, 0.2f})}, 2,
                                1.0, 0.0, noise);
  ASSERT_TRUE(other.ok());
  EXPECT_LE((*sum - *other).norm().item<double>(), 2.0 + 1e-6);
  // One user removed moves it by at most C.
  auto without = NoisedClippedSum({torch::tensor({0.1f, 0.2f})}, 2, 1.0, 0.0, noise);
  ASSERT_TRUE(without.ok());
  EXPECT_LE((*sum - *without).norm().item<double>(), 1.0 + 1e-6);
}

// A party adds its users' updates batch by batch: the release is the one of all of them at
// once, a non-finite update counting as zero, and a batch of another width adds nothing.
TEST(DpFedAvgTest, UpdatesAddedInBatchesReleaseTheSumOfAllOfThem) {
  torch::manual_seed(8);
  const torch::Tensor updates = torch::randn({7, 5});
  std::vector<torch::Tensor> each;
  for (int64_t u = 0; u < 7; ++u) each.push_back(updates[u]);
  SecureRandom noise = SecureRandom::Derived("dp-fedavg", "noise", 5);
  auto whole = NoisedClippedSum(each, 5, /*clip_norm=*/1.0, /*noise_multiplier=*/0.7, noise);
  ASSERT_TRUE(whole.ok()) << whole.status();

  ClippedSumAccumulator batches(5, /*clip_norm=*/1.0);
  ASSERT_TRUE(batches.Add(updates.slice(0, 0, 3)).ok());
  ASSERT_TRUE(batches.Add(updates.slice(0, 3, 3)).ok());
  EXPECT_EQ(batches.Add(torch::zeros({2, 4})).code(), absl::StatusCode::kInvalidArgument);
  torch::Tensor poisoned = torch::full({1, 5}, std::nanf(""));
  ASSERT_TRUE(batches.Add(poisoned).ok());
  ASSERT_TRUE(batches.Add(updates.slice(0, 3, 7)).ok());
  SecureRandom same = SecureRandom::Derived("dp-fedavg", "noise", 5);
  auto added = batches.Noised(0.7, same);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_TRUE(torch::allclose(*added, *whole, 1e-6, 1e-6)) << *added - *whole;
}

TEST(DpFedAvgTest, TheNoiseHasStandardDeviationZTimesTwoC) {
  SecureRandom noise = SecureRandom::Derived("dp-fedavg", "noise", 2);
  constexpr int64_t kDim = 200000;
  auto sum = NoisedClippedSum({}, kDim, /*clip_norm=*/0.5, /*noise_multiplier=*/1.5, noise);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_NEAR(sum->mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(sum->std().item<double>(), 1.5 * 2 * 0.5, 0.01);
}

TEST(DpFedAvgTest, ThePlannedEpsilonHoldsForNeighboursThatSwapOneUser) {
  // The run publishes its user counts, so neighbouring runs swap one user's rows.
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::dpfedavg);
  privacy.set_epsilon(8);
  privacy.set_ledger("party.ledger");
  ASSERT_TRUE(ResolveHorizontalPrivacy(&privacy).ok());
  v1::HorizontalConfig horizontal;
  horizontal.set_users_per_round(1000);
  ASSERT_TRUE(ResolveHorizontalConfig(&horizontal, v1::PrivacyConfig::dpfedavg).ok());
  auto plan = ResolveHorizontalPlan(privacy, horizontal, v1::TrainingConfig(), 3, 32561);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const double c = plan->privacy().clip_norm();
  // Swapping a drawn user for one whose update points the other way moves the sum by 2C.
  SecureRandom unused = SecureRandom::Derived("dp-fedavg", "unused", 0);
  auto one = NoisedClippedSum({torch::tensor({5.0f, 0.0f})}, 2, c, 0.0, unused);
  auto swapped = NoisedClippedSum({torch::tensor({-5.0f, 0.0f})}, 2, c, 0.0, unused);
  ASSERT_TRUE(one.ok() && swapped.ok());
  const double distance = (*one - *swapped).norm().item<double>();
  EXPECT_NEAR(distance, DpFedAvgSensitivity(c), 1e-5);
  // The noise the sum carries over that distance is the multiplier the plan's ε is for.
  SecureRandom noise = SecureRandom::Derived("dp-fedavg", "noise", 3);
  auto noised = NoisedClippedSum({}, 200000, c, plan->noise_multiplier(), noise);
  ASSERT_TRUE(noised.ok()) << noised.status();
  privacy::StepMechanism mechanism = DpFedAvgMechanism(*plan);
  mechanism.noise_multipliers = {noised->std().item<double>() / distance};
  auto spent = privacy::ComputeEpsilon(mechanism, plan->rounds(), plan->privacy().delta(),
                                       privacy::Conversion::kImproved);
  ASSERT_TRUE(spent.ok()) << spent.status();
  EXPECT_NEAR(spent->epsilon, Guarantee(*plan, Observer::kPublished).epsilon_planned(), 0.1);
}

TEST(DpFedAvgTest, TheCuratorAveragesOverTheExpectedUsers) {
  auto average =
      FedAvgAverage({torch::tensor({1.0f, 2.0f}), torch::tensor({3.0f, -2.0f})}, /*users_asked=*/4);
  ASSERT_TRUE(average.ok()) << average.status();
  EXPECT_TRUE(torch::allclose(*average, torch::tensor({1.0f, 0.0f})));
}

// Adam's update written out for one coordinate, in double, over the averages `g`.
double AdamByHand(const std::vector<double>& g, double learning_rate) {
  double m = 0, v = 0, x = 0;
  for (size_t t = 1; t <= g.size(); ++t) {
    m = 0.9 * m + 0.1 * g[t - 1];
    v = 0.99 * v + 0.01 * g[t - 1] * g[t - 1];
    x += learning_rate * (m / (1 - std::pow(0.9, t))) /
         (std::sqrt(v / (1 - std::pow(0.99, t))) + 1e-8);
  }
  return x;
}

TEST(DpFedAvgTest, FedAdamStepsAsAdamWithTheAverageAsDescentDirection) {
  FedAdam adam(3, /*learning_rate=*/0.01);
  torch::Tensor flat = torch::zeros({3});
  // A first step moves every coordinate by the learning rate in its average's direction,
  // whatever the average's scale; a coordinate no average moves stays.
  adam.Step(torch::tensor({2e-3f, -300.0f, 0.0f}), flat);
  EXPECT_NEAR(flat[0].item<double>(), 0.01, 1e-6);
  EXPECT_NEAR(flat[1].item<double>(), -0.01, 1e-6);
  EXPECT_EQ(flat[2].item<double>(), 0.0);
  adam.Step(torch::tensor({-4e-3f, 100.0f, 1.0f}), flat);
  adam.Step(torch::tensor({1e-3f, 200.0f, 0.5f}), flat);
  EXPECT_NEAR(flat[0].item<double>(), AdamByHand({2e-3, -4e-3, 1e-3}, 0.01), 1e-6);
  EXPECT_NEAR(flat[1].item<double>(), AdamByHand({-300, 100, 200}, 0.01), 1e-6);
  EXPECT_NEAR(flat[2].item<double>(), AdamByHand({0, 1, 0.5}, 0.01), 1e-6);
  EXPECT_EQ(adam.state().steps, 3);
}

TEST(DpFedAvgTest, FedAdamRestoredContinuesAsIfNeverStopped) {
  FedAdam straight(2, 0.1), stopped(2, 0.1), resumed(2, 0.1);
  torch::Tensor a = torch::zeros({2}), b = torch::zeros({2});
  for (const auto& average : {torch::tensor({1.0f, -1.0f}), torch::tensor({0.5f, 2.0f})}) {
    straight.Step(average, a);
    stopped.Step(average, b);
  }
  ASSERT_TRUE(resumed.Restore(stopped.state()).ok());
  straight.Step(torch::tensor({-1.0f, 0.25f}), a);
  resumed.Step(torch::tensor({-1.0f, 0.25f}), b);
  EXPECT_TRUE(torch::equal(a, b));

  // A state that is not one of this model is refused and changes nothing.
  const FedAdam::State kept = resumed.state();
  for (const FedAdam::State& bad : std::vector<FedAdam::State>{
           {torch::zeros({3}), torch::zeros({3}), 1},
           {torch::zeros({2}), torch::tensor({1.0f, -1.0f}), 1},
           {torch::tensor({NAN, 0.0f}), torch::zeros({2}), 1},
           {torch::zeros({2}), torch::zeros({2}), -1},
           {torch::zeros({2}, torch::kFloat64), torch::zeros({2}), 1},
       }) {
    EXPECT_EQ(resumed.Restore(bad).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(torch::equal(resumed.state().first_moment, kept.first_moment));
    EXPECT_EQ(resumed.state().steps, kept.steps);
  }
}

TEST(DpFedAvgTest, BadInputIsRefused) {
  SecureRandom noise = SecureRandom::Derived("dp-fedavg", "noise", 3);
  const std::vector<torch::Tensor> one = {torch::zeros({2})};
  EXPECT_EQ(NoisedClippedSum(one, 2, 0.0, 1.0, noise).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NoisedClippedSum(one, 2, 1.0, -1.0, noise).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NoisedClippedSum(one, 3, 1.0, 1.0, noise).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NoisedClippedSum({torch::zeros({1, 2})}, 2, 1.0, 1.0, noise).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FedAvgAverage({}, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FedAvgAverage(one, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FedAvgAverage({torch::zeros({2}), torch::zeros({3})}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vfsynth
