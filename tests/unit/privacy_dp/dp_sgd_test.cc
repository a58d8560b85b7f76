#include "common/dp/dp_sgd.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "common/dp/per_example_gradients.h"
#include "common/nn/networks.h"
#include "common/nn/wgan.h"
#include "common/random/secure_random.h"

namespace vfsynth {
namespace {

at::Generator Fixed(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }
// DP noise from a stream of a fixed key, so a test repeats (the calls take it as *Keyed(n)).
std::unique_ptr<SecureRandom> Keyed(uint64_t seed) {
  return std::make_unique<SecureRandom>(SecureRandom::Derived("dp-sgd-test", "noise", seed));
}

// Sample mean and standard deviation of all entries.
std::pair<double, double> MeanStd(const torch::Tensor& t) {
  const torch::Tensor d = t.to(torch::kDouble).flatten();
  return {d.mean().item<double>(), d.std().item<double>()};
}

TEST(ClipAndSumTest, BoundsEveryNormAndLeavesSmallOnesUnchanged) {
  // Two parameters; example i's joint gradient is (a_i, b_i) with a known norm.
  const torch::Tensor a = torch::tensor({{0.3f, 0.4f}, {3.0f, 4.0f}, {0.0f, 0.0f}, {60.0f, 0.0f}});
  const torch::Tensor b = torch::tensor({{0.0f}, {0.0f}, {0.0f}, {80.0f}});
  // Norms: 0.5, 5, 0, 100.
  absl::StatusOr<ClippedSum> clipped = ClipAndSum({a, b}, 1.0);
  ASSERT_TRUE(clipped.ok()) << clipped.status();
  EXPECT_NEAR(clipped->diagnostics.mean_norm, (0.5 + 5 + 0 + 100) / 4, 1e-6);
  EXPECT_NEAR(clipped->diagnostics.max_norm, 100, 1e-4);
  EXPECT_DOUBLE_EQ(clipped->diagnostics.fraction_clipped, 0.5);
  // 0.5-norm row unchanged, 5-norm row -> (0.6, 0.8), 100-norm row -> (0.6, 0, 0.8).
  EXPECT_TRUE(torch::allclose(clipped->sum[0], torch::tensor({0.3f + 0.6f + 0.6f, 0.4f + 0.8f})));
  EXPECT_TRUE(torch::allclose(clipped->sum[1], torch::tensor({0.8f})));

  // Example by example: the clipped norm is <= C, and a small example is bit-identical.
  for (int64_t i = 0; i < 4; ++i) {
    absl::StatusOr<ClippedSum> one = ClipAndSum({a.narrow(0, i, 1), b.narrow(0, i, 1)}, 1.0);
    ASSERT_TRUE(one.ok());
    const double norm = std::sqrt(one->sum[0].pow(2).sum().item<double>() +
                                  one->sum[1].pow(2).sum().item<double>());
    EXPECT_LE(norm, 1.0 + 1e-6);
    if (i == 0 || i == 2) {
      EXPECT_TRUE(torch::equal(one->sum[0], a[i]));
      EXPECT_TRUE(torch::equal(one->sum[1], b[i]));
    }
  }
}

TEST(ClipAndSumTest, ClipsRealCriticGradientsJointlyOverAllParameters) {
  torch::manual_seed(11);
  ScoreNet critic(8, std::vector<int>{16}, 0.2);
  CriticExamples ex{
      torch::randn({32, 8}), torch::randn({32, 8}), torch::rand({32, 1}), 10.0, {}, {}};
  absl::StatusOr<PerExampleGradients> pe = CriticPerExampleGradients({critic.ptr()}, ex);
  ASSERT_TRUE(pe.ok());
  const torch::Tensor norms = PerExampleNorms(pe->grads);
  const double c = norms.median().item<double>();
  // Clipping each example alone must give norm min(‖g_i‖, C).
  for (int64_t i = 0; i < 32; ++i) {
    std::vector<torch::Tensor> one;
    for (const auto& g : pe->grads) one.push_back(g.narrow(0, i, 1));
    absl::StatusOr<ClippedSum> clipped = ClipAndSum(one, c);
    ASSERT_TRUE(clipped.ok());
    std::vector<torch::Tensor> as_batch;
    for (const auto& s : clipped->sum) as_batch.push_back(s.unsqueeze(0));
    const double after = PerExampleNorms(as_batch)[0].item<double>();
    EXPECT_NEAR(after, std::min(norms[i].item<double>(), c), 1e-5 * c);
  }
}

TEST(ClipAndSumTest, NonFiniteExampleContributesZero) {
  const torch::Tensor g = torch::tensor({{1.0f, 0.0f}, {NAN, 1.0f}, {0.0f, INFINITY}});
  absl::StatusOr<ClippedSum> clipped = ClipAndSum({g}, 10.0);
  ASSERT_TRUE(clipped.ok());
  EXPECT_EQ(clipped->diagnostics.nonfinite, 2);
  EXPECT_TRUE(torch::equal(clipped->sum[0], torch::tensor({1.0f, 0.0f})));
}

// A party's feat: 9 columns - 16 - 6 features.
FeatureNet SmallFeatureNet() {
  v1::ModelConfig config;
  config.add_feature_hidden(16);
  config.set_feature_dim(6);
  config.mutable_experimental()->set_leaky_slope(0.2);
  return FeatureNet(9, config);
}

TEST(DpSgdStepTest, ZeroNoiseHugeClipEqualsPlainGradient) {
  torch::manual_seed(12);
  FeatureNet feat = SmallFeatureNet();
  ScoreNet head(6, std::vector<int>{}, 0.2);
  const int64_t b = 10;
  const torch::Tensor real = torch::randn({b, 9}), fake = torch::randn({b, 9});
  const torch::Tensor alpha = torch::rand({b, 1});
  const torch::Tensor grad_real = torch::randn({b, 6}) / b, grad_fake = torch::randn({b, 6}) / b;

  // The non-private party step's gradient (party_model.cc).
  auto critic = [&](const torch::Tensor& x) { return head->forward(feat->forward(x)); };
  const torch::Tensor h_r = feat->forward(real), h_f = feat->forward(fake);
  const torch::Tensor total = CriticLoss(head->forward(h_r), head->forward(h_f)) +
                              10.0 * GradientPenalty(critic, real, fake, alpha) +
                              (h_r * grad_real).sum() + (h_f * grad_fake).sum();
  absl::StatusOr<std::vector<torch::Tensor>> params = CriticParameters({feat.ptr(), head.ptr()});
  ASSERT_TRUE(params.ok());
  const std::vector<torch::Tensor> plain = torch::autograd::grad({total}, *params);

  CriticExamples ex{real, fake, alpha, 10.0, grad_real * b, grad_fake * b};
  absl::StatusOr<PerExampleGradients> pe = CriticPerExampleGradients({feat.ptr(), head.ptr()}, ex);
  ASSERT_TRUE(pe.ok());
  DpSgdOptions options;
  options.clip_norm = 1e9;
  options.noise_multiplier = 0.0;
  absl::StatusOr<ClipDiagnostics> diag = DpSgdStep(*params, pe->grads, options, *Keyed(1));
  ASSERT_TRUE(diag.ok()) << diag.status();
  EXPECT_EQ(diag->fraction_clipped, 0.0);
  EXPECT_EQ(diag->noise_std, 0.0);
  for (size_t p = 0; p < plain.size(); ++p) {
    const torch::Tensor got = (*params)[p].grad();
    ASSERT_TRUE(got.defined());
    EXPECT_TRUE(torch::allclose(got, plain[p], 1e-4, 1e-6)) << "parameter " << p;
  }
  // An existing optimizer steps on the written gradients.
  torch::optim::SGD sgd(*params, torch::optim::SGDOptions(0.1));
  const torch::Tensor before = (*params)[0].detach().clone();
  sgd.step();
  EXPECT_TRUE(torch::allclose((*params)[0].detach(), before - 0.1 * plain[0], 1e-4, 1e-6));
}

// The planning figure a party logs matches the noise the step really writes: with
// zero per-example gradients, the written mean gradient is pure noise.
TEST(DpSgdStepTest, MeanGradientNoiseToClipIsTheWrittenNoisesNorm) {
  const int64_t b = 64;
  const double z = 1.5, clip = 0.5;
  std::vector<torch::Tensor> params = {torch::zeros({40, 30}), torch::zeros({30})};
  const std::vector<torch::Tensor> per_example = {torch::zeros({b, 40, 30}), torch::zeros({b, 30})};
  DpSgdOptions options;
  options.clip_norm = clip;
  options.noise_multiplier = z;
  ASSERT_TRUE(DpSgdStep(params, per_example, options, *Keyed(3)).ok());
  const double norm = std::sqrt(params[0].grad().pow(2).sum().item<double>() +
                                params[1].grad().pow(2).sum().item<double>());
  const double planned = MeanGradientNoiseToClip(z, 40 * 30 + 30, b);
  EXPECT_NEAR(planned, 2 * z * std::sqrt(1230.0) / b, 1e-12);
  EXPECT_NEAR(norm / clip, planned, 0.05 * planned);  // a chi norm over 1230 draws: within ~2 %
  EXPECT_EQ(MeanGradientNoiseToClip(z, 0, b), 0.0);
}

// The factored step (what the critics use) clips and noises exactly like the step on
// materialised per-example gradients: same norms, same clipped sum, same noise draws.
TEST(DpSgdStepTest, FactoredEqualsMaterialised) {
  torch::manual_seed(13);
  FeatureNet feat = SmallFeatureNet();
  ScoreNet head(6, std::vector<int>{}, 0.2);
  const int64_t b = 12;
  CriticExamples ex{torch::randn({b, 9}), torch::randn({b, 9}), torch::rand({b, 1}), 10.0,
                    torch::randn({b, 6}), torch::randn({b, 6})};
  ex.upstream_real[3][2] = std::numeric_limits<float>::infinity();  // example 3 is dropped
  absl::StatusOr<std::vector<torch::Tensor>> params = CriticParameters({feat.ptr(), head.ptr()});
  ASSERT_TRUE(params.ok());
  absl::StatusOr<FactoredPerExampleGradients> factored =
      CriticFactoredGradients({feat.ptr(), head.ptr()}, ex);
  ASSERT_TRUE(factored.ok()) << factored.status();
  std::vector<torch::Tensor> materialised;
  for (const FactoredGradient& g : factored->grads) materialised.push_back(Materialize(g));
  const torch::Tensor norms = FactoredSquaredNorms(factored->grads).sqrt();
  const torch::Tensor expected_norms = PerExampleNorms(materialised);
  EXPECT_FALSE(std::isfinite(norms[3].item<double>()));
  const torch::Tensor finite = torch::isfinite(expected_norms);
  EXPECT_TRUE(torch::allclose(norms.masked_select(finite), expected_norms.masked_select(finite),
                              1e-6, 1e-9));

  DpSgdOptions options;
  options.clip_norm =
      0.5 * expected_norms.masked_select(finite).median().item<double>();  // clips about half
  options.noise_multiplier = 0.7;
  ASSERT_TRUE(DpSgdStep(*params, materialised, options, *Keyed(5)).ok());
  std::vector<torch::Tensor> want;
  for (const auto& p : *params) want.push_back(p.grad().clone());
  absl::StatusOr<ClipDiagnostics> diag =
      DpSgdStepFactored(*params, factored->grads, options, *Keyed(5));
  ASSERT_TRUE(diag.ok()) << diag.status();
  EXPECT_EQ(diag->nonfinite, 1);
  EXPECT_GT(diag->fraction_clipped, 0.2);
  for (size_t p = 0; p < want.size(); ++p) {
    EXPECT_TRUE(torch::allclose((*params)[p].grad(), want[p], 1e-4, 1e-6)) << "parameter " << p;
  }
  // A mismatch between factors and parameters is refused.
  std::vector<FactoredGradient> wrong = factored->grads;
  wrong[0].right.pop_back();
  EXPECT_FALSE(DpSgdStepFactored(*params, wrong, options, *Keyed(5)).ok());
}

// With fake_terms_public the fake row's terms are flagged, do not depend on the real
// rows, and the step clips the real-row half and the fake-row half of each example
// apart: replacing one real record moves the noise-free gradient by at most 2C/B.
TEST(DpSgdStepTest, SyntheticHalfIsClippedApartAndCarriesNoSensitivity) {
  torch::manual_seed(17);
  FeatureNet feat = SmallFeatureNet();
  ScoreNet head(6, std::vector<int>{}, 0.2);
  const std::vector<CriticStage> stages = {feat.ptr(), head.ptr()};
  const int64_t b = 10;
  CriticExamples ex{torch::randn({b, 9}), torch::randn({b, 9}), torch::rand({b, 1}), 10.0,
                    torch::randn({b, 6}), torch::randn({b, 6})};
  ex.fake_terms_public = true;
  absl::StatusOr<std::vector<torch::Tensor>> params = CriticParameters(stages);
  ASSERT_TRUE(params.ok());
  absl::StatusOr<FactoredPerExampleGradients> split = CriticFactoredGradients(stages, ex);
  ASSERT_TRUE(split.ok()) << split.status();
  // The flags only label the terms: together they are the whole per-example gradient.
  CriticExamples unflagged = ex;
  unflagged.fake_terms_public = false;
  absl::StatusOr<FactoredPerExampleGradients> whole = CriticFactoredGradients(stages, unflagged);
  ASSERT_TRUE(whole.ok());
  const std::vector<FactoredGradient> real_half = SelectTerms(split->grads, false);
  const std::vector<FactoredGradient> fake_half = SelectTerms(split->grads, true);
  for (size_t p = 0; p < whole->grads.size(); ++p) {
    EXPECT_TRUE(whole->grads[p].synthetic.empty());
    EXPECT_TRUE(torch::allclose(Materialize(real_half[p]) + Materialize(fake_half[p]),
                                Materialize(whole->grads[p]), 1e-5, 1e-7))
        << "parameter " << p;
  }
  // Other real rows leave the fake half as it was and change the real half.
  CriticExamples other = ex;
  other.real = torch::randn({b, 9});
  other.upstream_real = torch::randn({b, 6});
  absl::StatusOr<FactoredPerExampleGradients> moved = CriticFactoredGradients(stages, other);
  ASSERT_TRUE(moved.ok());
  const std::vector<FactoredGradient> moved_fake = SelectTerms(moved->grads, true);
  const std::vector<FactoredGradient> moved_real = SelectTerms(moved->grads, false);
  EXPECT_TRUE(torch::equal(Materialize(moved_fake[0]), Materialize(fake_half[0])));
  EXPECT_FALSE(torch::allclose(Materialize(moved_real[0]), Materialize(real_half[0])));

  // The step writes (Σ_i clip(real half_i) + Σ_i clip(fake half_i)) / B.
  const double c = 0.5 * FactoredSquaredNorms(real_half).sqrt().median().item<double>();
  DpSgdOptions options;
  options.clip_norm = c;
  ASSERT_TRUE(DpSgdStepFactored(*params, split->grads, options, *Keyed(3)).ok());
  std::vector<torch::Tensor> real_materialised, fake_materialised;
  for (size_t p = 0; p < real_half.size(); ++p) {
    real_materialised.push_back(Materialize(real_half[p]));
    fake_materialised.push_back(Materialize(fake_half[p]));
  }
  absl::StatusOr<ClippedSum> real_sum = ClipAndSum(real_materialised, c);
  absl::StatusOr<ClippedSum> fake_sum = ClipAndSum(fake_materialised, c);
  ASSERT_TRUE(real_sum.ok() && fake_sum.ok());
  EXPECT_GT(real_sum->diagnostics.fraction_clipped, 0.2);
  std::vector<torch::Tensor> written;
  for (size_t p = 0; p < params->size(); ++p) {
    written.push_back((*params)[p].grad().clone());
    EXPECT_TRUE(torch::allclose(written[p], (real_sum->sum[p] + fake_sum->sum[p]) / b, 1e-4, 1e-6))
        << "parameter " << p;
  }
  // Sensitivity: replace example 4's real row (and its upstream gradient) by anything.
  CriticExamples neighbour = ex;
  neighbour.real = ex.real.clone();
  neighbour.real[4] = torch::randn({9}) * 100;
  neighbour.upstream_real = ex.upstream_real.clone();
  neighbour.upstream_real[4] = torch::randn({6}) * 100;
  absl::StatusOr<FactoredPerExampleGradients> near = CriticFactoredGradients(stages, neighbour);
  ASSERT_TRUE(near.ok());
  ASSERT_TRUE(DpSgdStepFactored(*params, near->grads, options, *Keyed(3)).ok());
  double sq = 0;
  for (size_t p = 0; p < params->size(); ++p) {
    sq += ((*params)[p].grad() - written[p]).to(torch::kDouble).pow(2).sum().item<double>();
  }
  EXPECT_LE(std::sqrt(sq), 2 * c / b * (1 + 1e-5));
  EXPECT_GT(std::sqrt(sq), 0.0);

  // Flags that do not match the terms are refused.
  std::vector<FactoredGradient> bad = split->grads;
  bad[0].synthetic.pop_back();
  EXPECT_FALSE(DpSgdStepFactored(*params, bad, options, *Keyed(3)).ok());
  bad = split->grads;
  bad[1].synthetic.assign(bad[1].left.size(), true);
  EXPECT_FALSE(DpSgdStepFactored(*params, bad, options, *Keyed(3)).ok());
}

// With zero per-example gradients the written gradient is pure noise / B. Over n = 3·10^5
// coordinates the sample std has relative standard error 1/sqrt(2n) ≈ 0.13%, so a 1%
// tolerance is ~7.7 standard errors (false-failure odds ~1e-14) yet would catch a wrong
// sensitivity (factor 2) or a missing /B. The mean's SE is σ/sqrt(n); we allow 6 SE.
TEST(DpSgdStepTest, NoiseStdIsZTimesTwoCOverB) {
  const int64_t b = 8;
  const double c = 0.7, z = 1.5;
  const std::vector<torch::Tensor> params = {torch::zeros({500, 400}, torch::requires_grad()),
                                             torch::zeros({100000}, torch::requires_grad())};
  const std::vector<torch::Tensor> per_example = {torch::zeros({b, 500, 400}),
                                                  torch::zeros({b, 100000})};
  DpSgdOptions options;
  options.clip_norm = c;
  options.noise_multiplier = z;
  absl::StatusOr<ClipDiagnostics> diag = DpSgdStep(params, per_example, options, *Keyed(42));
  ASSERT_TRUE(diag.ok());
  const double expected = z * 2 * c / b;
  EXPECT_DOUBLE_EQ(diag->noise_std, expected);
  const torch::Tensor all = torch::cat({params[0].grad().flatten(), params[1].grad().flatten()});
  const auto [mean, std] = MeanStd(all);
  const double n = static_cast<double>(all.numel());
  EXPECT_NEAR(std, expected, 0.01 * expected);
  EXPECT_NEAR(mean, 0.0, 6 * expected / std::sqrt(n));
  // Different parameters get independent noise (not one draw reused).
  EXPECT_FALSE(torch::equal(params[0].grad().flatten().narrow(0, 0, 1000),
                            params[1].grad().narrow(0, 0, 1000)));

  // The same fixed generator reproduces the step; another seed does not.
  const torch::Tensor first = params[1].grad().clone();
  ASSERT_TRUE(DpSgdStep(params, per_example, options, *Keyed(42)).ok());
  EXPECT_TRUE(torch::equal(params[1].grad(), first));
  ASSERT_TRUE(DpSgdStep(params, per_example, options, *Keyed(43)).ok());
  EXPECT_FALSE(torch::equal(params[1].grad(), first));
}

TEST(DpSgdStepTest, RejectsBadArguments) {
  const std::vector<torch::Tensor> params = {torch::zeros({3}, torch::requires_grad())};
  const std::vector<torch::Tensor> per_example = {torch::zeros({4, 3})};
  DpSgdOptions options;
  options.clip_norm = 0;
  EXPECT_FALSE(DpSgdStep(params, per_example, options, *Keyed(1)).ok());
  options.clip_norm = 1;
  options.noise_multiplier = -1;
  EXPECT_FALSE(DpSgdStep(params, per_example, options, *Keyed(1)).ok());
  options.noise_multiplier = 1;
  EXPECT_FALSE(DpSgdStep(params, {torch::zeros({4, 2})}, options, *Keyed(1)).ok());
  EXPECT_FALSE(DpSgdStep(params, {}, options, *Keyed(1)).ok());
  EXPECT_TRUE(DpSgdStep(params, per_example, options, *Keyed(1)).ok());
}

TEST(ClipAndNoiseRowsTest, ClipsEachRowAndKeepsSmallRows) {
  const torch::Tensor rows =
      torch::tensor({{0.1f, 0.2f, 0.2f}, {3.0f, 0.0f, 4.0f}, {0.0f, 0.0f, 0.0f}});
  absl::StatusOr<NoisyRows> out = ClipAndNoiseRows(rows, 1.0, 0.0, *Keyed(1));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(torch::equal(out->rows[0], rows[0]));
  EXPECT_TRUE(torch::allclose(out->rows[1], torch::tensor({0.6f, 0.0f, 0.8f})));
  EXPECT_TRUE(torch::equal(out->rows[2], rows[2]));
  EXPECT_NEAR(out->diagnostics.fraction_clipped, 1.0 / 3, 1e-12);
  EXPECT_LE(out->rows.norm(2, 1).max().item<double>(), 1.0 + 1e-6);
}

// 2000 x 128 = 256,000 entries: std's relative SE 0.14%, tolerance 1% (~7 SE).
TEST(ClipAndNoiseRowsTest, NoiseStdIsZTimesTwoCf) {
  const double c = 2.0, z = 0.8;
  // Rows far above C_f: after clipping every row has norm C_f exactly, so the noise is
  // measured on (out - clipped).
  const torch::Tensor rows = torch::randn({2000, 128}, Fixed(3)) * 10;
  absl::StatusOr<NoisyRows> clean = ClipAndNoiseRows(rows, c, 0.0, *Keyed(4));
  absl::StatusOr<NoisyRows> noisy = ClipAndNoiseRows(rows, c, z, *Keyed(4));
  ASSERT_TRUE(clean.ok() && noisy.ok());
  EXPECT_NEAR(clean->rows.norm(2, 1).max().item<double>(), c, 1e-5);
  EXPECT_DOUBLE_EQ(noisy->diagnostics.noise_std, z * 2 * c);
  const auto [mean, std] = MeanStd(noisy->rows - clean->rows);
  EXPECT_NEAR(std, z * 2 * c, 0.01 * z * 2 * c);
  EXPECT_NEAR(mean, 0.0, 6 * z * 2 * c / std::sqrt(2000.0 * 128));
}

}  // namespace
}  // namespace vfsynth
