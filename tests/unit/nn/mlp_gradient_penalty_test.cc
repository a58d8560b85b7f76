// MlpGradientPenalty must compute what the autograd GradientPenalty computes: the same
// value and, through backward, the same gradients (parameters and inputs).
#include "common/nn/mlp_gradient_penalty.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/nn/networks.h"
#include "common/nn/wgan.h"

namespace vfsynth {
namespace {

constexpr double kSlope = 0.2;

FeatureNet MakeFeat(int input, std::vector<int> hidden, int output) {
  v1::ModelConfig config;
  for (int h : hidden) config.add_feature_hidden(h);
  config.set_feature_dim(output);
  config.mutable_experimental()->set_leaky_slope(kSlope);
  return FeatureNet(input, config);
}

torch::Tensor Critic(const std::vector<CriticStage>& stages, torch::Tensor x) {
  for (const CriticStage& stage : stages) {
    if (auto feat = std::dynamic_pointer_cast<FeatureNetImpl>(stage)) {
      x = feat->forward(x);
    } else {
      x = std::dynamic_pointer_cast<ScoreNetImpl>(stage)->forward(x);
    }
  }
  return x;
}

std::vector<torch::Tensor> Parameters(const std::vector<CriticStage>& stages) {
  std::vector<torch::Tensor> params;
  for (const CriticStage& stage : stages) {
    for (const torch::Tensor& p : stage->parameters()) params.push_back(p);
  }
  return params;
}

// Gradients of `loss`, with "no gradient" (a bias the penalty never reaches) as zeros.
std::vector<torch::Tensor> Grads(const torch::Tensor& loss, const std::vector<torch::Tensor>& wrt) {
  std::vector<torch::Tensor> grads =
      torch::autograd::grad({loss}, wrt, /*grad_outputs=*/{},
                            /*retain_graph=*/false,
                            /*create_graph=*/false, /*allow_unused=*/true);
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) grads[i] = torch::zeros_like(wrt[i]);
  }
  return grads;
}

struct Tolerance {
  double rtol, atol;
};

Tolerance TolFor(torch::Dtype dtype) {
  return dtype == torch::kDouble ? Tolerance{1e-10, 1e-12} : Tolerance{2e-4, 1e-6};
}

void ExpectClose(const torch::Tensor& actual, const torch::Tensor& expected, Tolerance tol,
                 const std::string& what) {
  ASSERT_TRUE(actual.sizes().equals(expected.sizes())) << what;
  const double max_diff = (actual - expected).abs().max().item<double>();
  const double scale = expected.abs().max().item<double>();
  EXPECT_LE(max_diff, tol.atol + tol.rtol * scale)
      << what << ": max |diff| " << max_diff << " at max |expected| " << scale;
}

class MlpGradientPenaltyTest : public ::testing::TestWithParam<torch::Dtype> {
 protected:
  // Compares the analytic penalty with autograd's on a batch of `b` rows, alone and
  // inside a full critic loss (which also exercises the biases' gradients).
  void ExpectMatchesAutograd(const std::vector<CriticStage>& stages, int64_t width, int64_t b) {
    const torch::Dtype dtype = GetParam();
    for (const CriticStage& stage : stages) stage->to(dtype);
    const auto opts = torch::TensorOptions().dtype(dtype);
    const torch::Tensor real = torch::randn({b, width}, opts);
    const torch::Tensor fake = torch::randn({b, width}, opts) * 2;
    const torch::Tensor alpha = torch::rand({b, 1}, opts);
    const std::vector<torch::Tensor> params = Parameters(stages);
    auto critic = [&](const torch::Tensor& x) { return Critic(stages, x); };
    const Tolerance tol = TolFor(dtype);

    const torch::Tensor expected = GradientPenalty(critic, real, fake, alpha);
    absl::StatusOr<torch::Tensor> actual = MlpGradientPenalty(stages, real, fake, alpha);
    ASSERT_TRUE(actual.ok()) << actual.status();
    ASSERT_EQ(actual->scalar_type(), dtype);
    ExpectClose(*actual, expected, tol, "penalty");
    // A penalty of zero would make the gradient checks vacuous.
    ASSERT_GT(expected.item<double>(), 1e-3);

    const std::vector<torch::Tensor> expected_grads = Grads(expected, params);
    const std::vector<torch::Tensor> actual_grads = Grads(*actual, params);
    double weight_grad_norm = 0;
    for (size_t p = 0; p < params.size(); ++p) {
      ExpectClose(actual_grads[p], expected_grads[p], tol,
                  "penalty gradient of parameter " + std::to_string(p));
      weight_grad_norm += expected_grads[p].norm().item<double>();
    }
    EXPECT_GT(weight_grad_norm, 1e-3);

    auto loss = [&](const torch::Tensor& penalty) {
      return CriticLoss(critic(real), critic(fake)) + 10.0 * penalty;
    };
    absl::StatusOr<torch::Tensor> again = MlpGradientPenalty(stages, real, fake, alpha);
    ASSERT_TRUE(again.ok()) << again.status();
    const std::vector<torch::Tensor> expected_loss_grads =
        Grads(loss(GradientPenalty(critic, real, fake, alpha)), params);
    const std::vector<torch::Tensor> actual_loss_grads = Grads(loss(*again), params);
    for (size_t p = 0; p < params.size(); ++p) {
      ExpectClose(actual_loss_grads[p], expected_loss_grads[p], tol,
                  "loss gradient of parameter " + std::to_string(p));
    }
  }
};

TEST_P(MlpGradientPenaltyTest, FeatureNetWithHiddenLayerAndHead) {
  torch::manual_seed(1);
  // VFLGAN's party critic: feat 53-256-128, head 128-1.
  ExpectMatchesAutograd(
      {MakeFeat(53, {256}, 128).ptr(), ScoreNet(128, std::vector<int>{}, kSlope).ptr()}, 53, 64);
}

TEST_P(MlpGradientPenaltyTest, FeatureNetWithoutHiddenLayerAndHead) {
  torch::manual_seed(2);
  ExpectMatchesAutograd(
      {MakeFeat(11, {}, 16).ptr(), ScoreNet(16, std::vector<int>{}, kSlope).ptr()}, 11, 32);
}

TEST_P(MlpGradientPenaltyTest, ScoreNetWithHiddenLayers) {
  torch::manual_seed(3);
  ExpectMatchesAutograd({ScoreNet(48, std::vector<int>{32, 32}, kSlope).ptr()}, 48, 40);
}

TEST_P(MlpGradientPenaltyTest, ScoreNetWithoutHiddenLayer) {
  // D(x) = w·x + b: grad_x D = w for every row.
  torch::manual_seed(4);
  ExpectMatchesAutograd({ScoreNet(8, std::vector<int>{}, kSlope).ptr()}, 8, 16);
}

TEST_P(MlpGradientPenaltyTest, InputsThatRequireGradGetAutogradsZeroGradient) {
  // The shared critic's inputs are features computed upstream: the penalty's gradient
  // with respect to them is zero (piecewise-linear critic), as autograd's double backward gives.
  torch::manual_seed(5);
  const torch::Dtype dtype = GetParam();
  ScoreNet critic(24, std::vector<int>{16}, kSlope);
  critic->to(dtype);
  const std::vector<CriticStage> stages = {critic.ptr()};
  const auto opts = torch::TensorOptions().dtype(dtype);
  const torch::Tensor real = torch::randn({12, 24}, opts).requires_grad_(true);
  const torch::Tensor fake = torch::randn({12, 24}, opts).requires_grad_(true);
  const torch::Tensor alpha = torch::rand({12, 1}, opts);
  const std::vector<torch::Tensor> inputs = {real, fake};

  const std::vector<torch::Tensor> expected =
      Grads(GradientPenalty([&](const torch::Tensor& x) { return critic->forward(x); }, real * 1.0,
                            fake * 1.0, alpha),
            inputs);
  absl::StatusOr<torch::Tensor> penalty = MlpGradientPenalty(stages, real * 1.0, fake * 1.0, alpha);
  ASSERT_TRUE(penalty.ok()) << penalty.status();
  ASSERT_TRUE(penalty->requires_grad());
  const std::vector<torch::Tensor> actual = torch::autograd::grad({*penalty}, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE(actual[i].defined());
    EXPECT_TRUE(torch::equal(actual[i], expected[i])) << "input " << i;
    EXPECT_EQ(actual[i].abs().max().item<double>(), 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MlpGradientPenaltyTest,
                         ::testing::Values(torch::kFloat, torch::kDouble),
                         [](const ::testing::TestParamInfo<torch::Dtype>& info) {
                           return info.param == torch::kDouble ? std::string("Double")
                                                               : std::string("Float");
                         });

TEST(MlpGradientPenaltyErrorsTest, RejectsNonMlpCriticsAndBadShapes) {
  torch::nn::Sequential tanh_critic(torch::nn::Linear(4, 1), torch::nn::Tanh());
  const torch::Tensor x = torch::randn({3, 4});
  const torch::Tensor alpha = torch::rand({3, 1});
  absl::StatusOr<torch::Tensor> bad = MlpGradientPenalty({tanh_critic.ptr()}, x, x, alpha);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("Tanh"), std::string::npos) << bad.status();

  ScoreNet critic(4, std::vector<int>{8}, kSlope);
  EXPECT_EQ(MlpGradientPenalty({critic.ptr()}, torch::randn({3, 5}), torch::randn({3, 5}), alpha)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MlpGradientPenalty({critic.ptr()}, x, x, torch::rand({2, 1})).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Stages whose widths do not chain.
  const std::vector<CriticStage> unchained = {MakeFeat(4, {}, 6).ptr(),
                                              ScoreNet(5, std::vector<int>{}, kSlope).ptr()};
  EXPECT_EQ(MlpGradientPenalty(unchained, x, x, alpha).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vfsynth
