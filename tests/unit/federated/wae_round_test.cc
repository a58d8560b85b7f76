// The horizontal round's math: a user's local update moves the model towards its rows
// (dpfedavg's SGD epoch exactly along its gradient), SignDS of that update points along
// it, and the curator's step is ±γ/n per report.
#include "common/federated/wae_round.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <vector>

namespace vfsynth {
namespace {

constexpr WaeOptions kArchitecture{/*input_dim=*/8, /*hidden=*/16, /*latent=*/3};

torch::Tensor UserRows() {
  const torch::Tensor block = torch::one_hot(torch::randint(4, {20}), 4).to(torch::kFloat32);
  return torch::cat({block, block}, 1);
}

TEST(WaeRoundTest, ALocalUpdateLowersTheUsersLossAndLeavesTheGlobalModel) {
  torch::manual_seed(3);
  Wae global(kArchitecture);
  const torch::Tensor flat = FlatParameters(*global);
  const torch::Tensor rows = UserRows();
  const torch::Tensor prior = torch::randn({20, 3});
  const double before = WaeLoss(global, rows, prior).item<double>();
  torch::Generator generator = torch::make_generator<torch::CPUGeneratorImpl>(5);
  auto update = LocalWaeUpdate(kArchitecture, flat, rows,
                               LocalUpdateOptions{/*epochs=*/50, 1e-2, 10}, generator);
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_TRUE(torch::equal(FlatParameters(*global), flat));
  Wae trained(kArchitecture);
  ASSERT_TRUE(AssignFlatParameters(*trained, flat + *update).ok());
  EXPECT_LT(WaeLoss(trained, rows, prior).item<double>(), 0.8 * before);

  // At a large ε the report is almost surely in the top-k set of its sign: the coordinate
  // moved furthest that way, so the curator's step follows the update.
  SecureRandom random = SecureRandom::Derived("wae-round", "coins", 0);
  const torch::Tensor delta = update->contiguous();
  const absl::Span<const float> values(delta.data_ptr<float>(), delta.numel());
  const int64_t k = SignDsTopK(delta.numel(), 0.05);
  for (int draw = 0; draw < 20; ++draw) {
    auto report = SignDs(values, k, /*epsilon=*/40, random);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_GT(values[report->index] * (report->positive ? 1 : -1), 0) << report->index;
  }
}

// dpfedavg's local update: one epoch of SGD on a one-row user is minus the learning rate
// times the gradient of the user's WAE loss at the broadcast model (the batch order and
// the prior sample drawn from the same stream).
TEST(WaeRoundTest, ALocalSgdEpochOnOneRowIsMinusTheRateTimesTheGradient) {
  torch::manual_seed(6);
  Wae global(kArchitecture);
  const torch::Tensor flat = FlatParameters(*global);
  const torch::Tensor row = UserRows().slice(0, 0, 1);
  torch::Generator generator = torch::make_generator<torch::CPUGeneratorImpl>(9);
  const LocalUpdateOptions sgd{/*epochs=*/1, /*learning_rate=*/0.5, /*batch_size=*/32,
                               LocalOptimizer(v1::PrivacyConfig::dpfedavg)};
  ASSERT_EQ(sgd.optimizer, LocalUpdateOptions::Optimizer::kSgd);
  auto update = LocalWaeUpdate(kArchitecture, flat, row, sgd, generator);
  ASSERT_TRUE(update.ok()) << update.status();

  torch::Generator same = torch::make_generator<torch::CPUGeneratorImpl>(9);
  torch::randperm(1, same, torch::kLong);
  const torch::Tensor prior = torch::randn({1, kArchitecture.latent}, same);
  global->zero_grad();
  WaeLoss(global, row, prior).backward();
  std::vector<torch::Tensor> gradients;
  for (const torch::Tensor& parameter : global->parameters())
    gradients.push_back(parameter.grad().reshape({-1}));
  EXPECT_TRUE(torch::allclose(*update, -0.5 * torch::cat(gradients), /*rtol=*/1e-4, /*atol=*/1e-6));
  EXPECT_EQ(LocalOptimizer(v1::PrivacyConfig::signds), LocalUpdateOptions::Optimizer::kAdam);
}

TEST(WaeRoundTest, AOneRowUserLearnsItsRowToo) {
  torch::manual_seed(4);
  Wae global(kArchitecture);
  const torch::Tensor flat = FlatParameters(*global);
  const torch::Tensor row = UserRows().slice(0, 0, 1);
  auto reconstruction = [&](Wae& model) {
    return torch::binary_cross_entropy_with_logits(model->DecodeLogits(model->Encode(row)), row)
        .item<double>();
  };
  const double before = reconstruction(global);
  torch::Generator generator = torch::make_generator<torch::CPUGeneratorImpl>(7);
  auto update = LocalWaeUpdate(kArchitecture, flat, row,
                               LocalUpdateOptions{/*epochs=*/30, 1e-2, 32}, generator);
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_TRUE(torch::isfinite(*update).all().item<bool>());
  Wae trained(kArchitecture);
  ASSERT_TRUE(AssignFlatParameters(*trained, flat + *update).ok());
  EXPECT_LT(reconstruction(trained), 0.8 * before);
}

TEST(WaeRoundTest, RowsThatDoNotFitAreRefused) {
  const torch::Tensor flat = FlatParameters(*Wae(kArchitecture));
  torch::Generator generator = torch::make_generator<torch::CPUGeneratorImpl>(6);
  EXPECT_EQ(
      LocalWaeUpdate(kArchitecture, flat, torch::zeros({0, 8}), {}, generator).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      LocalWaeUpdate(kArchitecture, flat, torch::zeros({4, 7}), {}, generator).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LocalWaeUpdate(kArchitecture, flat.slice(0, 1), torch::zeros({4, 8}), {}, generator)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(WaeRoundTest, TheCuratorMovesEachReportedCoordinateByGammaOverN) {
  torch::Tensor flat = torch::zeros({6});
  ASSERT_TRUE(
      ApplySignDsReports({{1, true}, {1, true}, {4, false}, {5, true}}, /*gamma=*/1.0, flat).ok());
  EXPECT_TRUE(torch::allclose(flat, torch::tensor({0.0f, 0.5f, 0.0f, 0.0f, -0.25f, 0.25f})));
  // A party that names a coordinate outside the model changes nothing.
  const torch::Tensor before = flat.clone();
  for (int64_t bad : {int64_t{-1}, int64_t{6}}) {
    const absl::Status status = ApplySignDsReports({{0, true}, {bad, false}}, 1.0, flat);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(torch::equal(flat, before));
  }
}

}  // namespace
}  // namespace vfsynth
