#include "common/nn/wgan.h"

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

TEST(WganTest, PackRowsPutsConsecutiveRowsSideBySide) {
  // Row r holds (10 r, 10 r + 1): a packed row must read rows i*pack .. i*pack+pack-1.
  const torch::Tensor rows =
      torch::arange(6, torch::kFloat32).unsqueeze(1) * 10 + torch::tensor({0.0f, 1.0f});
  ASSERT_FLOAT_EQ(rows[3][1].item<float>(), 31.0f);
  const torch::Tensor packed = PackRows(rows, 3);
  ASSERT_EQ(packed.sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_TRUE(torch::equal(packed, torch::tensor({{0.0f, 1.0f, 10.0f, 11.0f, 20.0f, 21.0f},
                                                  {30.0f, 31.0f, 40.0f, 41.0f, 50.0f, 51.0f}})));
  EXPECT_TRUE(torch::equal(PackRows(rows, 2)[1], torch::tensor({20.0f, 21.0f, 30.0f, 31.0f})));
  // pack 1 is the identity, and of the same tensor (no copy, no extra graph node).
  EXPECT_TRUE(PackRows(rows, 1).is_same(rows));
  // A batch that is no multiple of the pack is a bug (config validation prevents it).
  EXPECT_THROW(PackRows(rows, 4), c10::Error);
}

TEST(WganTest, PackRowsPassesGradientsBackPerRow) {
  // Rows come from torch::cat of per-party leaves, as in the curator: each leaf's
  // gradient must come back in its own (B, d) shape, to its own rows.
  const torch::Tensor a = torch::randn({4, 2}).requires_grad_(true);
  const torch::Tensor b = torch::randn({4, 3}).requires_grad_(true);
  const torch::Tensor packed = PackRows(torch::cat({a, b}, 1), 2);
  ASSERT_EQ(packed.sizes(), (std::vector<int64_t>{2, 10}));
  // Weight column j of packed row i by 100 i + j: row r of party a, column c sits in
  // packed row r / 2 at column (r % 2) * 5 + c; party b's at (r % 2) * 5 + 2 + c.
  const torch::Tensor weights =
      torch::arange(2, torch::kFloat32).unsqueeze(1) * 100 + torch::arange(10, torch::kFloat32);
  (packed * weights).sum().backward();
  ASSERT_EQ(a.grad().sizes(), a.sizes());
  ASSERT_EQ(b.grad().sizes(), b.sizes());
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 2; ++c) {
      EXPECT_FLOAT_EQ(a.grad()[r][c].item<float>(), 100 * (r / 2) + (r % 2) * 5 + c);
    }
    for (int c = 0; c < 3; ++c) {
      EXPECT_FLOAT_EQ(b.grad()[r][c].item<float>(), 100 * (r / 2) + (r % 2) * 5 + 2 + c);
    }
  }
}

TEST(WganTest, CriticLossIsFakeMinusReal) {
  EXPECT_NEAR(CriticLoss(torch::tensor({1.0f, 3.0f}), torch::tensor({0.0f, 1.0f})).item<float>(),
              0.5f - 2.0f, 1e-6);
}

}  // namespace
}  // namespace vfsynth
