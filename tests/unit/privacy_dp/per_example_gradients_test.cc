#include "common/dp/per_example_gradients.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>

#include "common/nn/networks.h"
#include "common/nn/wgan.h"

namespace vfsynth {
namespace {

using TensorFn = std::function<torch::Tensor(const torch::Tensor&)>;

FeatureNet MakeFeat(int input, const std::vector<int>& hidden, int features) {
  v1::ModelConfig config;
  for (int h : hidden) config.add_feature_hidden(h);
  config.set_feature_dim(features);
  config.mutable_experimental()->set_leaky_slope(0.2);
  return FeatureNet(input, config);
}

// Reference: one ℓ_i at a time through the real modules, exactly as party_model.cc /
// curator_model.cc build the loss, on a batch of one row.
struct LoopResult {
  std::vector<torch::Tensor> grads;  // per parameter [B, ...]
  torch::Tensor input_real, input_fake;
};

LoopResult PerSampleLoop(const TensorFn& critic, const TensorFn& first_stage,
                         const std::vector<torch::Tensor>& params, const CriticExamples& ex) {
  const int64_t b = ex.real.size(0);
  std::vector<std::vector<torch::Tensor>> rows(params.size());
  std::vector<torch::Tensor> in_r, in_f;
  for (int64_t i = 0; i < b; ++i) {
    const torch::Tensor r = ex.real.narrow(0, i, 1).detach().requires_grad_(true);
    const torch::Tensor f = ex.fake.narrow(0, i, 1).detach().requires_grad_(true);
    torch::Tensor loss = CriticLoss(critic(r), critic(f)) +
                         ex.gp_lambda * GradientPenalty(critic, r, f, ex.alpha.narrow(0, i, 1));
    if (ex.upstream_real.defined())
      loss = loss + (first_stage(r) * ex.upstream_real.narrow(0, i, 1)).sum();
    if (ex.upstream_fake.defined())
      loss = loss + (first_stage(f) * ex.upstream_fake.narrow(0, i, 1)).sum();
    std::vector<torch::Tensor> inputs = params;
    inputs.push_back(r);
    inputs.push_back(f);
    const std::vector<torch::Tensor> g = torch::autograd::grad({loss}, inputs);
    for (size_t p = 0; p < params.size(); ++p) rows[p].push_back(g[p]);
    in_r.push_back(g[params.size()]);
    in_f.push_back(g[params.size() + 1]);
  }
  LoopResult result;
  for (auto& r : rows) result.grads.push_back(torch::stack(r, 0));
  result.input_real = torch::cat(in_r, 0);
  result.input_fake = torch::cat(in_f, 0);
  return result;
}

// max |a - b| relative to max(1, max |b|).
double RelDiff(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(1.0, b.abs().max().item<double>());
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>() / scale;
}

CriticExamples RandomExamples(int64_t b, int64_t d_in, int64_t d_1, bool upstream,
                              torch::Dtype dtype) {
  const auto opts = torch::TensorOptions().dtype(dtype);
  CriticExamples ex;
  ex.real = torch::randn({b, d_in}, opts);
  ex.fake = torch::randn({b, d_in}, opts);
  ex.alpha = torch::rand({b, 1}, opts);
  ex.gp_lambda = 10.0;
  if (upstream) {
    ex.upstream_real = torch::randn({b, d_1}, opts);
    ex.upstream_fake = torch::randn({b, d_1}, opts);
  }
  return ex;
}

PerExampleGradientOptions WithInputGradients() {
  PerExampleGradientOptions options;
  options.input_gradients = true;
  return options;
}

class PartyCriticTest : public ::testing::TestWithParam<torch::Dtype> {};

// With a hidden layer in feat_k, and without one (the default: feat_k is one Linear +
// LeakyReLU, so the penalty's chain is one layer shorter).
TEST_P(PartyCriticTest, FeatureNetPlusHeadMatchesPerSampleLoop) {
  for (const std::vector<int>& hidden : {std::vector<int>{16}, std::vector<int>{}}) {
    SCOPED_TRACE(hidden.empty() ? "no hidden layer" : "one hidden layer");
    torch::manual_seed(1);
    const torch::Dtype dtype = GetParam();
    FeatureNet feat = MakeFeat(10, hidden, 8);
    ScoreNet head(8, std::vector<int>{}, 0.2);
    feat->to(dtype);
    head->to(dtype);
    const CriticExamples ex = RandomExamples(6, 10, 8, /*upstream=*/true, dtype);

    absl::StatusOr<std::vector<torch::Tensor>> params = CriticParameters({feat.ptr(), head.ptr()});
    ASSERT_TRUE(params.ok()) << params.status();
    absl::StatusOr<PerExampleGradients> pe =
        CriticPerExampleGradients({feat.ptr(), head.ptr()}, ex, WithInputGradients());
    ASSERT_TRUE(pe.ok()) << pe.status();

    auto critic = [&](const torch::Tensor& x) { return head->forward(feat->forward(x)); };
    auto first = [&](const torch::Tensor& x) { return feat->forward(x); };
    const LoopResult loop = PerSampleLoop(critic, first, *params, ex);
    const double tol = dtype == torch::kDouble ? 1e-10 : 1e-5;
    ASSERT_EQ(pe->grads.size(), loop.grads.size());
    for (size_t p = 0; p < loop.grads.size(); ++p) {
      ASSERT_EQ(pe->grads[p].sizes(), loop.grads[p].sizes()) << "parameter " << p;
      EXPECT_LT(RelDiff(pe->grads[p], loop.grads[p]), tol) << "parameter " << p;
    }
    EXPECT_LT(RelDiff(pe->input_grad_real, loop.input_real), tol);
    EXPECT_LT(RelDiff(pe->input_grad_fake, loop.input_fake), tol);
    // The penalty really is in there: its contribution is not negligible at λ = 10.
    EXPECT_GT(pe->grads[0].abs().max().item<double>(), 1e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PartyCriticTest, ::testing::Values(torch::kFloat, torch::kDouble));

TEST(PerExampleGradientsTest, SharedCriticWithHiddenLayerMatchesPerSampleLoop) {
  torch::manual_seed(2);
  ScoreNet shared(12, std::vector<int>{16}, 0.2);  // (K·d_h) - hidden - 1
  const CriticExamples ex = RandomExamples(7, 12, 0, /*upstream=*/false, torch::kFloat);
  absl::StatusOr<PerExampleGradients> pe =
      CriticPerExampleGradients({shared.ptr()}, ex, WithInputGradients());
  ASSERT_TRUE(pe.ok()) << pe.status();
  auto critic = [&](const torch::Tensor& h) { return shared->forward(h); };
  const LoopResult loop = PerSampleLoop(critic, critic, shared->parameters(), ex);
  for (size_t p = 0; p < loop.grads.size(); ++p) {
    EXPECT_LT(RelDiff(pe->grads[p], loop.grads[p]), 1e-5) << "parameter " << p;
  }
  EXPECT_LT(RelDiff(pe->input_grad_real, loop.input_real), 1e-5);
  EXPECT_LT(RelDiff(pe->input_grad_fake, loop.input_fake), 1e-5);
}

// party_model.cc: total = CriticLoss(head(h_r), head(h_f)) + λ·GP(head∘feat, real, fake, α)
//                         + Σ h_r·grad_real + Σ h_f·grad_fake, where grad_real is the
// curator's gradient of its MEAN loss. Per-example upstream = B · grad_real.
TEST(PerExampleGradientsTest, MeanEqualsPartyBatchLossGradient) {
  torch::manual_seed(3);
  FeatureNet feat = MakeFeat(9, {20}, 6);
  ScoreNet head(6, std::vector<int>{}, 0.2);
  const int64_t b = 16;
  const double lambda = 10.0;
  const torch::Tensor real = torch::randn({b, 9}), fake = torch::randn({b, 9});
  const torch::Tensor alpha = torch::rand({b, 1});
  const torch::Tensor grad_real = torch::randn({b, 6}) / b, grad_fake = torch::randn({b, 6}) / b;

  std::vector<torch::Tensor> params = feat->parameters();
  for (const auto& p : head->parameters()) params.push_back(p);
  auto critic = [&](const torch::Tensor& x) { return head->forward(feat->forward(x)); };
  const torch::Tensor h_r = feat->forward(real), h_f = feat->forward(fake);
  const torch::Tensor total = CriticLoss(head->forward(h_r), head->forward(h_f)) +
                              lambda * GradientPenalty(critic, real, fake, alpha) +
                              (h_r * grad_real).sum() + (h_f * grad_fake).sum();
  const std::vector<torch::Tensor> batch = torch::autograd::grad({total}, params);

  CriticExamples ex{real, fake, alpha, lambda, grad_real * b, grad_fake * b};
  absl::StatusOr<PerExampleGradients> pe = CriticPerExampleGradients({feat.ptr(), head.ptr()}, ex);
  ASSERT_TRUE(pe.ok()) << pe.status();
  for (size_t p = 0; p < params.size(); ++p) {
    EXPECT_LT(RelDiff(pe->grads[p].mean(0), batch[p]), 1e-5) << "parameter " << p;
  }
}

// curator_model.cc: L_s = CriticLoss(D_s(H_r), D_s(H_f)) + λ·GP(D_s, H_r, H_f, α); the
// leaves' .grad() are what goes down to the parties.
TEST(PerExampleGradientsTest, MeanEqualsSharedCriticBatchLossGradient) {
  torch::manual_seed(4);
  ScoreNet shared(10, std::vector<int>{32}, 0.2);
  const int64_t b = 12;
  const torch::Tensor hr = torch::randn({b, 10}).requires_grad_(true);
  const torch::Tensor hf = torch::randn({b, 10}).requires_grad_(true);
  const torch::Tensor alpha = torch::rand({b, 1});
  auto critic = [&](const torch::Tensor& h) { return shared->forward(h); };
  const torch::Tensor loss = CriticLoss(shared->forward(hr), shared->forward(hf)) +
                             10.0 * GradientPenalty(critic, hr, hf, alpha);
  std::vector<torch::Tensor> inputs = shared->parameters();
  inputs.push_back(hr);
  inputs.push_back(hf);
  const std::vector<torch::Tensor> batch = torch::autograd::grad({loss}, inputs);

  CriticExamples ex{hr, hf, alpha, 10.0, {}, {}};
  absl::StatusOr<PerExampleGradients> pe =
      CriticPerExampleGradients({shared.ptr()}, ex, WithInputGradients());
  ASSERT_TRUE(pe.ok()) << pe.status();
  const size_t n = shared->parameters().size();
  for (size_t p = 0; p < n; ++p) EXPECT_LT(RelDiff(pe->grads[p].mean(0), batch[p]), 1e-5);
  EXPECT_LT(RelDiff(pe->input_grad_real / b, batch[n]), 1e-5);
  EXPECT_LT(RelDiff(pe->input_grad_fake / b, batch[n + 1]), 1e-5);
  // The batch loss is the mean of the per-example losses.
  EXPECT_NEAR(pe->loss.mean().item<double>(), loss.item<double>(), 1e-5);
}

TEST(PerExampleGradientsTest, ParameterOrderAndHelpers) {
  FeatureNet feat = MakeFeat(5, {7}, 3);
  ScoreNet head(3, std::vector<int>{}, 0.2);
  absl::StatusOr<std::vector<torch::Tensor>> params = CriticParameters({feat.ptr(), head.ptr()});
  ASSERT_TRUE(params.ok());
  std::vector<torch::Tensor> expected = feat->parameters();
  for (const auto& p : head->parameters()) expected.push_back(p);
  ASSERT_EQ(params->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE((*params)[i].is_same(expected[i]));

  const std::vector<torch::Tensor> g = {torch::full({2, 3, 4}, 1.0), torch::full({2, 3}, 2.0)};
  EXPECT_EQ(FlattenPerExample(g).sizes(), (std::vector<int64_t>{2, 15}));
  EXPECT_NEAR(PerExampleNorms(g)[1].item<double>(), std::sqrt(12.0 + 12.0), 1e-12);
}

TEST(PerExampleGradientsTest, RejectsUnsupportedModulesAndShapes) {
  torch::nn::Sequential tanh(torch::nn::Linear(4, 1), torch::nn::Tanh());
  CriticExamples ex{torch::randn({3, 4}), torch::randn({3, 4}), torch::rand({3, 1}), 10.0, {}, {}};
  absl::StatusOr<PerExampleGradients> bad = CriticPerExampleGradients({tanh.ptr()}, ex);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("Tanh"), std::string::npos) << bad.status();

  torch::nn::Sequential wide(torch::nn::Linear(4, 2));  // Two scores per row.
  EXPECT_FALSE(CriticPerExampleGradients({wide.ptr()}, ex).ok());
  torch::nn::Sequential ok(torch::nn::Linear(4, 1));
  CriticExamples wrong = ex;
  wrong.alpha = torch::rand({3});
  EXPECT_FALSE(CriticPerExampleGradients({ok.ptr()}, wrong).ok());
  wrong = ex;
  wrong.upstream_real = torch::randn({3, 2});  // First stage outputs 1.
  EXPECT_FALSE(CriticPerExampleGradients({ok.ptr()}, wrong).ok());
  EXPECT_TRUE(CriticPerExampleGradients({ok.ptr()}, ex).ok());
}

TEST(PerExampleGradientsTest, WorksUnderNoGradGuard) {
  ScoreNet shared(4, std::vector<int>{5}, 0.2);
  CriticExamples ex{torch::randn({3, 4}), torch::randn({3, 4}), torch::rand({3, 1}), 10.0, {}, {}};
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(CriticPerExampleGradients({shared.ptr()}, ex).ok());
}

// Not an assertion: time per call for the default party critic (feat 60-256-64, head 64-1).
TEST(PerExampleGradientsTest, BenchmarkAgainstLoop) {
  torch::manual_seed(5);
  FeatureNet feat = MakeFeat(60, {256}, 64);
  ScoreNet head(64, std::vector<int>{}, 0.2);
  std::vector<torch::Tensor> params = feat->parameters();
  for (const auto& p : head->parameters()) params.push_back(p);
  auto critic = [&](const torch::Tensor& x) { return head->forward(feat->forward(x)); };
  auto first = [&](const torch::Tensor& x) { return feat->forward(x); };
  for (int64_t b : {64, 256}) {
    const CriticExamples ex = RandomExamples(b, 60, 64, /*upstream=*/true, torch::kFloat);
    auto time_ms = [](const std::function<void()>& fn, int reps) {
      fn();  // Warm-up.
      const auto start = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) fn();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                 .count() /
             reps;
    };
    const double factored = time_ms(
        [&] {
          ASSERT_TRUE(CriticFactoredGradients({feat.ptr(), head.ptr()}, ex).ok());
        },
        5);
    const double materialised = time_ms(
        [&] {
          ASSERT_TRUE(CriticPerExampleGradients({feat.ptr(), head.ptr()}, ex).ok());
        },
        5);
    const double loop = time_ms([&] { PerSampleLoop(critic, first, params, ex); }, 2);
    std::printf(
        "[benchmark] B=%lld threads=%d: factored %.2f ms, materialised %.2f ms, "
        "per-sample loop %.1f ms\n",
        static_cast<long long>(b), torch::get_num_threads(), factored, materialised, loop);
  }
}

}  // namespace
}  // namespace vfsynth
