// The horizontal mode's WAE: the MMD estimate against its definition, the loss falling
// under local training, and the flat parameter vector SignDS indexes.
#include "common/nn/wae.h"

#include <gtest/gtest.h>

namespace vfsynth {
namespace {

// Eq. (4) of DP-FED-WAE written out term by term.
double MmdByDefinition(const torch::Tensor& q, const torch::Tensor& p, double kappa) {
  const int64_t n = q.size(0);
  auto k = [&](const torch::Tensor& a, const torch::Tensor& b) {
    return kappa / (kappa + (a - b).pow(2).sum().item<double>());
  };
  double pp = 0, qq = 0, pq = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      pq += k(p[i], q[j]);
      if (i == j) continue;
      pp += k(p[i], p[j]);
      qq += k(q[i], q[j]);
    }
  }
  return pp / (n * (n - 1)) + qq / (n * (n - 1)) - 2 * pq / (n * n);
}

TEST(WaeTest, ImqMmdIsTheUnbiasedEstimateOfItsDefinition) {
  torch::manual_seed(1);
  const torch::Tensor q = torch::randn({7, 3}, torch::kFloat64);
  const torch::Tensor p = torch::randn({7, 3}, torch::kFloat64) + 0.5;
  EXPECT_NEAR(ImqMmd(q, p, 6.0).item<double>(), MmdByDefinition(q, p, 6.0), 1e-12);
  // Far apart codes score higher than codes drawn like the prior.
  const torch::Tensor prior = torch::randn({256, 4});
  EXPECT_LT(std::abs(ImqMmd(torch::randn({256, 4}), prior, 8.0).item<double>()), 0.01);
  EXPECT_GT(ImqMmd(torch::randn({256, 4}) + 3.0, prior, 8.0).item<double>(), 0.1);
}

TEST(WaeTest, LocalTrainingLowersTheLoss) {
  torch::manual_seed(2);
  Wae model(WaeOptions{/*input_dim=*/12, /*hidden=*/32, /*latent=*/4});
  // Rows of two one-hot blocks (6 + 6 columns) with the second block a copy of the first.
  const torch::Tensor first = torch::one_hot(torch::randint(6, {64}), 6).to(torch::kFloat32);
  const torch::Tensor x = torch::cat({first, first}, 1);
  const double before = WaeLoss(model, x, torch::randn({64, 4})).item<double>();
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-2));
  for (int step = 0; step < 200; ++step) {
    adam.zero_grad();
    WaeLoss(model, x, torch::randn({64, 4})).backward();
    adam.step();
  }
  EXPECT_LT(WaeLoss(model, x, torch::randn({64, 4})).item<double>(), 0.6 * before);
}

TEST(WaeTest, FlatParametersRoundTripInRegistrationOrder) {
  Wae model(WaeOptions{/*input_dim=*/10, /*hidden=*/8, /*latent=*/3});
  const torch::Tensor flat = FlatParameters(*model);
  // (10·8 + 8) + (8·3 + 3) + (3·8 + 8) + (8·10 + 10)
  ASSERT_EQ(flat.numel(), 88 + 27 + 32 + 90);
  EXPECT_EQ(WaeParameterCount(WaeOptions{10, 8, 3}), flat.numel());
  EXPECT_EQ(WaeParameterCount(WaeOptions{7, 5, 2}),
            FlatParameters(*Wae(WaeOptions{7, 5, 2})).numel());
  // The first coordinates are the encoder's first weight row.
  EXPECT_TRUE(torch::equal(flat.slice(0, 0, 10), model->parameters()[0][0]));
  const torch::Tensor changed = flat + 1.0;
  ASSERT_TRUE(AssignFlatParameters(*model, changed).ok());
  EXPECT_TRUE(torch::equal(FlatParameters(*model), changed));
  // A vector of the wrong length is refused and changes nothing.
  EXPECT_EQ(AssignFlatParameters(*model, torch::zeros({5})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AssignFlatParameters(*model, torch::zeros({1, flat.numel()})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(torch::equal(FlatParameters(*model), changed));
}

}  // namespace
}  // namespace vfsynth
