// ε of whole training runs against published / independently reproduced values:
// VFLGAN (seed-003 §4.4), GS-WGAN (seed-002 §4.5, §4.7), Opacus (anchors-mission §3.5).
#include <cmath>
#include <vector>

#include "common/privacy/accountant.h"
#include "common/privacy/conversion.h"
#include "common/privacy/rdp.h"
#include "gtest/gtest.h"

namespace vfsynth::privacy {
namespace {

EpsilonAndOrder Epsilon(double z, double q, int64_t steps, double delta, Conversion conversion,
                        Sampler sampler = Sampler::kWithoutReplacement, int releases = 1) {
  StepMechanism mechanism{std::vector<double>(releases, z), q, sampler};
  absl::StatusOr<EpsilonAndOrder> result = ComputeEpsilon(mechanism, steps, delta, conversion);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : EpsilonAndOrder{};
}

struct VflganRow {
  const char* dataset;
  double n, batch;
  int64_t steps;
  double delta, sigma, epsilon;
  int order;  // 0: not published
};

// seed-003 §4.4: autodp, Wang et al. Thm 9, classic conversion, one release
// per discriminator step, T = steps/epoch × epochs.
const std::vector<VflganRow>& VflganRows() {
  static const auto* rows = new std::vector<VflganRow>{
      {"MNIST", 60000, 64, 937 * 300, 1e-5, 0.802, 9.99, 4},
      {"Adult eps10", 42960, 64, 671 * 60, 1e-5, 0.6128, 9.99, 3},
      {"Adult eps5", 42960, 64, 671 * 60, 1e-5, 0.8, 5.00, 6},
      {"Red wine eps10", 1599, 16, 100 * 150, 5e-4, 1.39, 9.98, 0},
      {"Red wine eps5", 1599, 16, 100 * 150, 5e-4, 2.348, 4.99, 0},
      {"White wine eps10", 4898, 32, 150 * 200, 2e-4, 1.34, 10.03, 0},
      {"White wine eps5", 4898, 32, 150 * 200, 2e-4, 2.253, 4.99, 0},
      {"Credit", 1000, 16, 100 * 50, 1e-3, 1.286, 9.95, 0},
      // The comment block's HCV row (N = 1385, 50 epochs) is inconsistent with
      // its claimed ε = 10; the seed summary reproduces 5.84 ...
      {"HCV comment", 1385, 16, 100 * 50, 8e-4, 1.428, 5.84, 0},
      // ... while privacy_analysis.py main() (γ = 16/1000, 65 epochs) gives 9.99.
      {"HCV main()", 1000, 16, 100 * 65, 8e-4, 1.428, 9.99, 0},
  };
  return *rows;
}

TEST(VflganVectorsTest, ClassicConversionReproducesPaperSettings) {
  for (const VflganRow& row : VflganRows()) {
    const EpsilonAndOrder eps =
        Epsilon(row.sigma, row.batch / row.n, row.steps, row.delta, Conversion::kClassic);
    EXPECT_NEAR(eps.epsilon, row.epsilon, 1e-2) << row.dataset;
    if (row.order != 0) {
      EXPECT_EQ(eps.order, row.order) << row.dataset;
    }
  }
}

// seed-003 §4.6(2) re-runs VFLGAN's accountant "with K = 2" (published to one
// decimal). Its numbers are 2·T separately amplified compositions at σ, i.e.
// each party's release gets its own subsampling event. The two releases share
// the step's one batch, so vfsynth instead sums their RDP and
// amplifies once (z_eff = σ/sqrt(2)), which is larger; docs/privacy.md.
TEST(VflganVectorsTest, TwoPartyComposition) {
  struct Row {
    int index;
    double epsilon;
  };
  for (const Row& r : std::vector<Row>{
           {0, 14.9}, {1, 14.2}, {2, 7.3}, {3, 15.8}, {4, 7.4}, {5, 15.8}, {6, 7.4}, {7, 15.4}}) {
    const VflganRow& row = VflganRows()[r.index];
    const double q = row.batch / row.n;
    const double per_release =
        Epsilon(row.sigma, q, 2 * row.steps, row.delta, Conversion::kClassic).epsilon;
    // Red wine ε10 comes out at 15.75, "15.8" in the summary; every other row
    // is within rounding (0.05) of its published value.
    EXPECT_NEAR(per_release, r.epsilon, r.index == 3 ? 0.06 : 0.05) << row.dataset;
    const double joint = Epsilon(row.sigma, q, row.steps, row.delta, Conversion::kClassic,
                                 Sampler::kWithoutReplacement, 2)
                             .epsilon;
    EXPECT_GT(joint, per_release) << row.dataset;
    EXPECT_NEAR(
        joint,
        Epsilon(row.sigma / std::sqrt(2.0), q, row.steps, row.delta, Conversion::kClassic).epsilon,
        1e-9)
        << row.dataset;
  }
}

// The improved conversion on VFLGAN's Adult settings (vfsynth's default).
TEST(VflganVectorsTest, ImprovedConversionAdult) {
  EXPECT_NEAR(Epsilon(0.6128, 64 / 42960.0, 40260, 1e-5, Conversion::kImproved).epsilon, 9.04,
              1e-2);
  EXPECT_NEAR(Epsilon(0.8, 64 / 42960.0, 40260, 1e-5, Conversion::kImproved).epsilon, 4.46, 1e-2);
}

// seed-002 §4.5: GS-WGAN's accountant, σ = 1.07, B = 32 per-sample releases
// composed as T·B subsampled mechanisms at γ = 1/K, δ = 1e-5, classic.
TEST(GsWganVectorsTest, ThesisTable) {
  const std::vector<int> ks = {250, 500, 750, 1000, 1500};
  struct Row {
    int thousand_steps;
    std::vector<double> epsilon;  // per K above
  };
  const std::vector<Row> table = {
      {1, {8.82, 4.11, 2.67, 1.98, 1.34}},       {2, {13.17, 5.98, 3.85, 2.84, 1.85}},
      {5, {23.78, 10.02, 6.31, 4.62, 2.99}},     {10, {36.04, 14.99, 9.32, 6.73, 4.32}},
      {15, {48.30, 19.60, 11.90, 8.45, 5.38}},   {20, {60.56, 23.78, 13.95, 9.99, 6.30}},
      {21, {63.02, 24.39, 14.36, 10.30, 6.47}},  {25, {72.83, 26.84, 16.00, 11.52, 7.15}},
      {30, {85.09, 29.91, 18.05, 12.67, 7.94}},  {35, {97.35, 32.97, 20.10, 13.82, 8.62}},
      {40, {109.61, 36.04, 22.15, 14.97, 9.30}},
  };
  for (const Row& row : table) {
    for (size_t k = 0; k < ks.size(); ++k) {
      const int64_t steps = int64_t{row.thousand_steps} * 1000 * 32;
      EXPECT_NEAR(Epsilon(1.07, 1.0 / ks[k], steps, 1e-5, Conversion::kClassic).epsilon,
                  row.epsilon[k], 1e-2)
          << "K=" << ks[k] << " T=" << row.thousand_steps << "k";
    }
  }
}

// seed-002 §4.7(b): step-level accounting, B = 32 releases per step each with
// multiplier 1.07·sqrt(32) (so z_eff = 1.07), one amplification per step.
TEST(GsWganVectorsTest, StepLevelAccountingWithReleases) {
  struct Row {
    int k, steps;
    double epsilon;
  };
  for (const Row& row : std::vector<Row>{{1500, 21000, 1.15},
                                         {750, 20000, 2.10},
                                         {1000, 39000, 2.19},
                                         {500, 38000, 4.52},
                                         {250, 21000, 7.00}}) {
    EXPECT_NEAR(Epsilon(1.07 * std::sqrt(32.0), 1.0 / row.k, row.steps, 1e-5, Conversion::kClassic,
                        Sampler::kWithoutReplacement, 32)
                    .epsilon,
                row.epsilon, 1e-2)
        << "K=" << row.k;
  }
}

// anchors-mission §3.5: Opacus RDPAccountant, default alphas, improved.
TEST(OpacusVectorsTest, PoissonAccountant) {
  struct Row {
    double q, sigma;
    int64_t steps;
    double delta, epsilon, order;
  };
  for (const Row& row : std::vector<Row>{
           {0.04, 1.5, 2250, 1e-5, 7.32911117143, 3.9},  // accountants_test
           {0.01, 1.1, 10000, 1e-5, 5.631992, 4.7},
           {0.01, 1.0, 300, 1e-5, 1.451368, 8.5},
           {0.01, 4.0, 10000, 1e-5, 1.035490, 17},
           {256 / 60000.0, 1.1, 60 * 234, 1e-5, 2.594363, 8.1},
           {0.1, 2.0, 1000, 1e-6, 9.821260, 3.7},
           {1.0, 1.0, 1, 1e-5, 4.728507, 5.4},
           {1.0, 10.0, 100, 1e-5, 4.728507, 5.4},
           {0.001, 1.07, 640000, 1e-5, 4.450242, 5.6},
       }) {
    const EpsilonAndOrder eps =
        Epsilon(row.sigma, row.q, row.steps, row.delta, Conversion::kImproved, Sampler::kPoisson);
    EXPECT_NEAR(eps.epsilon, row.epsilon, 1e-6) << "q=" << row.q << " sigma=" << row.sigma;
    EXPECT_NEAR(eps.order, row.order, 1e-9) << "q=" << row.q << " sigma=" << row.sigma;
  }
}

// Opacus rdp.py docstring: two mechanisms composed, orders 2..32.
TEST(OpacusVectorsTest, DocstringComposition) {
  std::vector<double> orders;
  for (int a = 2; a <= 32; ++a) orders.push_back(a);
  RdpAccountant accountant(Sampler::kPoisson, orders);
  ASSERT_TRUE(accountant.Compose({{1.0}, 1e-5, Sampler::kPoisson}, 10).ok());
  ASSERT_TRUE(accountant.Compose({{3.0}, 1e-4, Sampler::kPoisson}, 4).ok());
  const EpsilonAndOrder eps = *accountant.GetEpsilon(1e-5, Conversion::kImproved);
  EXPECT_NEAR(eps.epsilon, 0.3363440633925957, 1e-9);
  EXPECT_EQ(eps.order, 23);
}

// Opacus compute_dp_sgd_privacy.py docstring: orders [2, 5, 10, 20, 100].
TEST(OpacusVectorsTest, ScriptDocstring) {
  RdpAccountant accountant(Sampler::kPoisson, {2, 5, 10, 20, 100});
  ASSERT_TRUE(accountant.Compose({{1.0}, 0.01, Sampler::kPoisson}, 300).ok());
  const EpsilonAndOrder eps = *accountant.GetEpsilon(1e-5, Conversion::kImproved);
  EXPECT_NEAR(eps.epsilon, 2.3933285, 1e-6);
  EXPECT_EQ(eps.order, 5);
}

TEST(AccountantTest, RejectsMixedSamplers) {
  RdpAccountant accountant(Sampler::kWithoutReplacement);
  EXPECT_FALSE(accountant.Compose({{1.0}, 0.01, Sampler::kPoisson}, 1).ok());
}

}  // namespace
}  // namespace vfsynth::privacy
