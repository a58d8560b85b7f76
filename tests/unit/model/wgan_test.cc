#include "common/model/wgan.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vfsynth {
namespace {

// D(x) = v1 * lrelu(w1 . x) + v2 * lrelu(w2 . x), slope 0.2, so
// grad_x D = v1 * lrelu'(w1 . x) * w1 + v2 * lrelu'(w2 . x) * w2.
struct TinyCritic {
  torch::Tensor w = torch::tensor({{1.0f, 0.0f}, {0.0f, -1.0f}}).requires_grad_(true);
  torch::Tensor v = torch::tensor({{2.0f}, {3.0f}}).requires_grad_(true);
  torch::Tensor operator()(const torch::Tensor& x) const {
    return torch::leaky_relu(x.matmul(w.t()), 0.2).matmul(v);
  }
};

TEST(WganTest, GradientPenaltyMatchesHandComputation) {
  TinyCritic critic;
  const torch::Tensor real = torch::tensor({{1.0f, 2.0f}, {-1.0f, -1.0f}});
  const torch::Tensor fake = torch::tensor({{3.0f, -1.0f}, {-1.0f, -1.0f}});
  const torch::Tensor alpha = torch::tensor({{0.5f}, {0.25f}});
  // Row 1: x_hat = (2, 0.5): w1.x = 2 > 0 (slope 1), w2.x = -0.5 (slope 0.2)
  //   grad = 2*(1,0) + 3*0.2*(0,-1) = (2, -0.6).
  // Row 2: x_hat = (-1, -1): w1.x = -1 (slope 0.2), w2.x = 1 (slope 1)
  //   grad = 2*0.2*(1,0) + 3*(0,-1) = (0.4, -3).
  const double n1 = std::sqrt(2.0 * 2.0 + 0.6 * 0.6);
  const double n2 = std::sqrt(0.4 * 0.4 + 3.0 * 3.0);
  const double expected = 0.5 * ((n1 - 1) * (n1 - 1) + (n2 - 1) * (n2 - 1));
  const torch::Tensor gp =
      GradientPenalty([&](const torch::Tensor& x) { return critic(x); }, real, fake, alpha);
  EXPECT_NEAR(gp.item<double>(), expected, 1e-5);

  // The penalty is differentiable w.r.t. the critic's parameters (double backward):
  // d/dv1 of row-1 term = 2 (n1 - 1) * (grad . d grad/dv1) / n1 with d grad/dv1 = (1, 0).
  gp.backward();
  const double dv1 = 0.5 * (2 * (n1 - 1) * (2.0 * 1.0) / n1 + 2 * (n2 - 1) * (0.4 * 0.2) / n2);
  EXPECT_NEAR(critic.v.grad()[0][0].item<double>(), dv1, 1e-5);
}

TEST(WganTest, GradientPenaltyFlowsIntoInputs) {
  // When real/fake are features computed upstream (the shared critic), the penalty
  // must pass gradient back to them.
  TinyCritic critic;
  const torch::Tensor real = torch::tensor({{1.0f, 2.0f}}).requires_grad_(true);
  const torch::Tensor fake = torch::tensor({{3.0f, -1.0f}}).requires_grad_(true);
  const torch::Tensor gp = GradientPenalty([&](const torch::Tensor& x) { return critic(x); },
                                           real * 1.0, fake * 1.0, torch::tensor({{0.5f}}));
  gp.backward();
  ASSERT_TRUE(real.grad().defined());
  // The critic is piecewise linear, so the input gradient of the penalty is zero
  // almost everywhere; it must be defined and finite.
  EXPECT_TRUE(torch::isfinite(real.grad()).all().item<bool>());
}

TEST(WganTest, CriticLossIsFakeMinusReal) {
  EXPECT_NEAR(CriticLoss(torch::tensor({1.0f, 3.0f}), torch::tensor({0.0f, 1.0f})).item<float>(),
              0.5f - 2.0f, 1e-6);
}

}  // namespace
}  // namespace vfsynth
