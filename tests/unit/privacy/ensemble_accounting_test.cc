// Accounting of the ensemble modes (gswgan, pate) against independently computed
// values: a direct long-double re-implementation of Wang-Balle-Kasiviswanathan Thm 9,
// the GS-WGAN table (seed-002 §4.5), the Gaussian closed form and the VDGAN-PATE /
// G-PATE calibrations of the seed summaries (seed-000 §3.4.1, seed-001 §4.4).
#include <cmath>
#include <vector>

#include "common/privacy/accountant.h"
#include "common/privacy/calibrator.h"
#include "common/privacy/ensemble_accounting.h"
#include "common/privacy/run_accounting.h"
#include "gtest/gtest.h"

namespace vfsynth::privacy {
namespace {

double Epsilon(const std::vector<ChargedSteps>& releases, double delta, Conversion conversion) {
  absl::StatusOr<EpsilonAndOrder> eps = ComposedEpsilon(releases, delta, conversion);
  EXPECT_TRUE(eps.ok()) << eps.status();
  return eps.ok() ? eps->epsilon : -1;
}

EnsembleShape Gswgan(int shards) { return {RowAggregation::kGswgan, shards, 0}; }
EnsembleShape PateThreshold() { return {RowAggregation::kPateThreshold, 16, 0}; }

// Thm 9 for the Gaussian at integer order a, written out term by term in long double
// (no log-space tricks, no shared code with rdp.cc), capped by the unsampled Gaussian.
long double DirectWorRdp(long double q, long double z, int a) {
  const long double e2 = 1.0L / (z * z);  // ε(2) = 2 / (2 z²)
  const long double binom2 = a * (a - 1.0L) / 2.0L;
  long double sum =
      1.0L + q * q * binom2 * std::min(4.0L * (std::exp(e2) - 1.0L), 2.0L * std::exp(e2));
  for (int j = 3; j <= a; ++j) {
    const long double log_binom =
        std::lgamma(a + 1.0L) - std::lgamma(j + 1.0L) - std::lgamma(a - j + 1.0L);
    sum += 2.0L * std::exp(j * std::log(q) + log_binom + (j - 1.0L) * j / (2.0L * z * z));
  }
  const long double cumulant =
      std::min<long double>(std::log(sum), (a - 1.0L) * a / (2.0L * z * z));
  return cumulant / (a - 1.0L);
}

double DirectClassicEpsilon(double q, double z, double compositions, double delta) {
  long double best = INFINITY;
  for (int a = 2; a <= 256; ++a) {
    best =
        std::min(best, compositions * DirectWorRdp(q, z, a) + std::log(1.0L / delta) / (a - 1.0L));
  }
  return static_cast<double>(best);
}

TEST(EnsembleAccountingTest, GswganRowIsGaussianSubsampledOneOfEShards) {
  const StepMechanism row = RowRelease(3.0, Gswgan(32));
  ASSERT_EQ(row.noise_multipliers.size(), 1u);
  EXPECT_DOUBLE_EQ(row.noise_multipliers[0], 3.0);
  EXPECT_DOUBLE_EQ(row.sample_rate, 1.0 / 32);
}

TEST(EnsembleAccountingTest, GswganMatchesDirectThm9) {
  struct Case {
    int shards;
    double z;
    double compositions;
  };
  for (const Case& c :
       std::vector<Case>{{32, 3.0, 46080}, {16, 6.0, 46080}, {1500, 1.07, 672000}}) {
    const double ours =
        Epsilon({{RowRelease(c.z, Gswgan(c.shards)), static_cast<int64_t>(c.compositions)}}, 1e-5,
                Conversion::kClassic);
    EXPECT_NEAR(ours, DirectClassicEpsilon(1.0 / c.shards, c.z, c.compositions, 1e-5), 1e-6)
        << c.shards << " " << c.z;
  }
}

// seed-002 §4.5: σ = 1.07, B = 32 per-row releases per step, T steps, q = 1/K. With a
// shard drawn per row (gswgan) these T·B releases are exactly what vfsynth composes.
TEST(EnsembleAccountingTest, GswganReproducesSeed002Table) {
  struct Cell {
    int shards;
    int64_t steps;
    double epsilon;
  };
  for (const Cell& cell : std::vector<Cell>{{1500, 21000, 6.47},
                                            {750, 20000, 13.95},
                                            {750, 30000, 18.05},
                                            {1000, 39000, 14.74},
                                            {500, 38000, 34.81},
                                            {250, 21000, 63.02},
                                            {250, 1000, 8.82},
                                            {1500, 40000, 9.30}}) {
    EXPECT_NEAR(Epsilon({{RowRelease(1.07, Gswgan(cell.shards)), cell.steps * 32}}, 1e-5,
                        Conversion::kClassic),
                cell.epsilon, 0.01)
        << cell.shards << " " << cell.steps;
  }
}

// Unsampled Gaussians: T releases of multiplier z give RDP T·α/(2z²), so classic
// ε = min over integer α of T·α/(2z²) + log(1/δ)/(α−1), bounded below by the continuous
// optimum A + 2√(A·log(1/δ)) with A = T/(2z²) (seed-000 §3.4.1).
TEST(EnsembleAccountingTest, PateThresholdIsUnamplifiedGaussian) {
  const double z = 250.0, delta = 1e-5;
  const int64_t releases = 3 * 256 * 60;
  const double a_coef = releases / (2 * z * z), b = std::log(1 / delta);
  double expected = INFINITY;
  for (int a = 2; a <= 256; ++a) expected = std::min(expected, a_coef * a + b / (a - 1));
  const double ours =
      Epsilon({{RowRelease(z, PateThreshold()), releases}}, delta, Conversion::kClassic);
  EXPECT_NEAR(ours, expected, 1e-9);
  EXPECT_GE(ours, a_coef + 2 * std::sqrt(a_coef * b) - 1e-12);
  EXPECT_LE(ours, a_coef + 2 * std::sqrt(a_coef * b) + 0.02);  // integer-order gap
}

// seed-000 §3.4.1: VDGAN-PATE with the corrected sensitivity 2√K, K = 5, T·m = 64,000
// votes: σ = 5544 for ε = 1 and 781 for ε = 8 (continuous α; integer α within 0.5%).
TEST(EnsembleAccountingTest, PateCalibrationMatchesSeed000) {
  for (const auto& [epsilon, sigma] :
       std::vector<std::pair<double, double>>{{1.0, 5544}, {8.0, 781}}) {
    absl::StatusOr<double> z = CalibrateNoise(
        [&](double candidate) -> absl::StatusOr<double> {
          return Epsilon({{RowRelease(candidate, PateThreshold()), 64000}}, 1e-5,
                         Conversion::kClassic);
        },
        epsilon);
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_NEAR(*z * VoteSumSensitivity(5) / sigma, 1.0, 0.005) << epsilon;
  }
  EXPECT_DOUBLE_EQ(VoteSumSensitivity(5), 2 * std::sqrt(5.0));  // not the thesis's √2·K
}

// G-PATE's Confident-GNMax query = threshold (sensitivity 1, std σ1) + noisy argmax (L2
// sensitivity √2, std σ2): λ/(2σ1²) + λ/σ2². seed-001 §4.4: σ1 = 3000, σ2 = 1000 allow
// 19,716 answered queries at ε = 1, δ = 1e-5 (classic, integer orders).
TEST(EnsembleAccountingTest, GnmaxQueryCostMatchesSeed001) {
  const StepMechanism query{{3000.0, 1000.0 / std::sqrt(2.0)}, 1.0, Sampler::kWithoutReplacement};
  EXPECT_LE(Epsilon({{query, 19716}}, 1e-5, Conversion::kClassic), 1.0);
  EXPECT_GT(Epsilon({{query, 19800}}, 1e-5, Conversion::kClassic), 1.0);
  // In vfsynth one multiplier z gives σ1 = z and σ2 = √2·z: 2p Gaussians of multiplier z per row.
  const StepMechanism row = RowRelease(7.0, {RowAggregation::kPateGnmax, 16, 8});
  EXPECT_EQ(row.noise_multipliers, std::vector<double>(16, 7.0));
  EXPECT_DOUBLE_EQ(row.sample_rate, 1.0);
}

RunShape DemoShape(Mode mode) {
  RunShape shape;
  shape.parties = 3;
  shape.records = 32561;
  shape.batch_size = 256;
  shape.n_critic = 5;
  shape.critic_steps = 60 * 5;
  shape.ensemble = MakeEnsembleShape(mode, 32, v1::ExperimentalEnsembleConfig::threshold, 8);
  return shape;
}

TEST(EnsembleAccountingTest, RunReleasesPerView) {
  const RunShape shape = DemoShape(v1::PrivacyConfig::gswgan);
  const std::vector<ChargedSteps> joint =
      RunReleases(v1::PrivacyConfig::gswgan, 4.0, shape, 60, View::kJoint);
  ASSERT_EQ(joint.size(), 2u);
  EXPECT_EQ(joint[0].steps, 300);  // feature releases: one per critic step ...
  EXPECT_EQ(joint[0].mechanism.noise_multipliers.size(), 3u);  // ... by each of K parties
  EXPECT_DOUBLE_EQ(joint[0].mechanism.sample_rate, 256.0 / 32561);
  EXPECT_EQ(joint[1].steps, 60 * 3 * 256);  // one release per synthetic row, party and round
  EXPECT_DOUBLE_EQ(joint[1].mechanism.sample_rate, 1.0 / 32);
  const std::vector<ChargedSteps> party =
      RunReleases(v1::PrivacyConfig::gswgan, 4.0, shape, 60, View::kParty);
  EXPECT_EQ(party[0].mechanism.noise_multipliers.size(), 1u);
  EXPECT_EQ(party[1].steps, 60 * 256);
  // Other parties know the shared batch, not a party's shard draws.
  const std::vector<ChargedSteps> against =
      RunReleases(v1::PrivacyConfig::gswgan, 4.0, shape, 60, View::kAgainstParties);
  EXPECT_DOUBLE_EQ(against[0].mechanism.sample_rate, 1.0);
  EXPECT_DOUBLE_EQ(against[1].mechanism.sample_rate, 1.0 / 32);
  // The non-ensemble modes keep their single per-critic-step mechanism.
  EXPECT_EQ(RunReleases(v1::PrivacyConfig::strict, 1.0, shape, 60, View::kJoint).size(), 1u);
}

// What the parties charge to their ledgers over a run adds up to the planned epsilon,
// under strictly increasing ledger keys.
TEST(EnsembleAccountingTest, LedgerChargesComposeToThePlan) {
  for (Mode mode :
       {v1::PrivacyConfig::gswgan, v1::PrivacyConfig::pate, v1::PrivacyConfig::strict}) {
    const RunShape shape = DemoShape(mode);
    RdpAccountant charged(Sampler::kWithoutReplacement);
    int64_t last_key = -1;
    for (int64_t round = 0; round < 60; ++round) {
      for (int c = 0; c < shape.n_critic; ++c) {
        const LedgerCharge charge = CriticStepCharge(mode, 40.0, shape, round * shape.n_critic + c);
        EXPECT_GT(charge.key, last_key);
        last_key = charge.key;
        ASSERT_TRUE(charged.Compose(charge.mechanism, charge.steps).ok());
      }
      const std::optional<LedgerCharge> rows = GeneratorRoundCharge(mode, 40.0, shape, round);
      ASSERT_EQ(rows.has_value(), IsEnsembleMode(mode));
      if (rows.has_value()) {
        EXPECT_GT(rows->key, last_key);
        last_key = rows->key;
        ASSERT_TRUE(charged.Compose(rows->mechanism, rows->steps).ok());
      }
    }
    absl::StatusOr<EpsilonAndOrder> planned =
        RunEpsilon(mode, 40.0, shape, 60, View::kJoint, 1e-5, Conversion::kImproved);
    ASSERT_TRUE(planned.ok());
    EXPECT_NEAR(charged.GetEpsilon(1e-5, Conversion::kImproved)->epsilon, planned->epsilon, 1e-9)
        << ModeName(mode);
  }
}

TEST(EnsembleAccountingTest, CalibrationHitsTheTarget) {
  for (Mode mode : {v1::PrivacyConfig::gswgan, v1::PrivacyConfig::pate}) {
    const RunShape shape = DemoShape(mode);
    absl::StatusOr<double> z = CalibrateRunNoise(mode, 10.0, 1e-5, Conversion::kImproved, shape);
    ASSERT_TRUE(z.ok()) << z.status();
    const double at =
        RunEpsilon(mode, *z, shape, 60, View::kJoint, 1e-5, Conversion::kImproved)->epsilon;
    EXPECT_LE(at, 10.0);
    EXPECT_NEAR(at, 10.0, 1e-3) << ModeName(mode);
    EXPECT_GT(
        RunEpsilon(mode, *z * 0.99, shape, 60, View::kJoint, 1e-5, Conversion::kImproved)->epsilon,
        10.0);
  }
}

TEST(EnsembleAccountingTest, ParsesTheModes) {
  EXPECT_EQ(*ParseMode("gswgan"), v1::PrivacyConfig::gswgan);
  EXPECT_EQ(*ParseMode("pate"), v1::PrivacyConfig::pate);
  EXPECT_EQ(ModeName(v1::PrivacyConfig::pate), "pate");
  EXPECT_TRUE(IsEnsembleMode(v1::PrivacyConfig::gswgan));
  EXPECT_FALSE(IsEnsembleMode(v1::PrivacyConfig::strict));
  EXPECT_FALSE(ParseMode("gs-wgan").ok());
}

}  // namespace
}  // namespace vfsynth::privacy
