// The ensemble modes' mechanisms on hand-made inputs: PATE votes and aggregation,
// G-PATE histograms and Confident-GNMax, the shard critics, and the party-side
// property the privacy argument rests on (a record moves only its own shard critic,
// and nothing that leaves depends on real rows except through the charged releases).
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/config/config.h"
#include "common/dp/pate_vote.h"
#include "common/gan/ensemble_party.h"
#include "common/gan/party_model.h"
#include "common/gan/shard_critics.h"
#include "common/privacy/party_noise.h"
#include "common/random/secure_random.h"

namespace vfsynth {
namespace {

at::Generator Fixed(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }
// The mechanisms' noise: a cryptographic stream of a fixed key, so a test repeats.
SecureRandom Keyed(uint64_t seed) { return SecureRandom::Derived("ensemble-test", "noise", seed); }

TEST(PateVoteTest, TopKVotesAreDeterministicAtTheClip) {
  // Top-2 by |g| are coordinates 1 (-3) and 3 (2); clipped to ±1 and normalised they are
  // exactly -1 and +1, so the stochastic sign has probability 0 / 1.
  const torch::Tensor grads = torch::tensor({0.1f, -3.0f, 0.5f, 2.0f}).view({1, 1, 4});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SecureRandom noise = Keyed(seed);
    const torch::Tensor votes = TopKStochasticSignVotes(grads, 2, 1.0, noise);
    EXPECT_TRUE(torch::equal(votes, torch::tensor({0.0f, -1.0f, 0.0f, 1.0f}).view({1, 1, 4})));
  }
}

TEST(PateVoteTest, StochasticSignIsUnbiasedAndHasExactlyKEntries) {
  // Row: (1, 0.5, 0.2 ignored as third largest with k = 2): the 0.5 coordinate is
  // normalised to 0.5 and votes +1 with probability 0.75, mean 0.5.
  const torch::Tensor one = torch::tensor({1.0f, 0.5f, 0.2f});
  const torch::Tensor grads = one.view({1, 1, 3}).expand({1, 40000, 3}).contiguous();
  SecureRandom noise = Keyed(7);
  const torch::Tensor votes = TopKStochasticSignVotes(grads, 2, 10.0, noise);
  EXPECT_TRUE(torch::all(votes.abs().sum(-1) == 2).item<bool>());
  EXPECT_TRUE(torch::all(votes.select(-1, 0) == 1).item<bool>());
  EXPECT_TRUE(torch::all(votes.select(-1, 2) == 0).item<bool>());
  EXPECT_NEAR(votes.select(-1, 1).mean().item<double>(), 0.5, 0.02);
}

TEST(PateVoteTest, ThresholdAggregationWithoutNoise) {
  // Three critics, one row, three coordinates: sums 3, -1, -3; threshold 2.
  const torch::Tensor votes =
      torch::tensor({1.0f, 0.0f, -1.0f, 1.0f, -1.0f, -1.0f, 1.0f, 0.0f, -1.0f}).view({3, 1, 3});
  SecureRandom noise = Keyed(1);
  EXPECT_TRUE(torch::equal(NoisyThresholdVote(votes, 2.0, 0.0, noise),
                           torch::tensor({1.0f, 0.0f, -1.0f}).view({1, 3})));
}

TEST(PateVoteTest, ThresholdAggregationNoiseHasTheGivenStd) {
  // All-zero votes: P(N(0, 5²) >= 5) = P(<= -5) = 0.1587 each.
  SecureRandom noise = Keyed(3);
  const torch::Tensor out = NoisyThresholdVote(torch::zeros({4, 200, 100}), 5.0, 5.0, noise);
  EXPECT_NEAR((out == 1).to(torch::kDouble).mean().item<double>(), 0.1587, 0.005);
  EXPECT_NEAR((out == -1).to(torch::kDouble).mean().item<double>(), 0.1587, 0.005);
}

TEST(GnmaxTest, HistogramBinsClippedValues) {
  // clip 1, 4 bins of width 0.5: -1 -> 0, -0.05 -> 1, 0.05 -> 2, 0.95 -> 3, 2 (clipped) -> 3.
  const torch::Tensor projected =
      torch::tensor({-1.0f, -0.05f, 0.05f, 0.95f, 2.0f}).view({5, 1, 1});
  EXPECT_TRUE(torch::equal(BinVoteHistogram(projected, 1.0, 4),
                           torch::tensor({1.0f, 1.0f, 1.0f, 2.0f}).view({1, 1, 4})));
}

TEST(GnmaxTest, ConfidentGnmaxAnswersOnlyConfidentQueries) {
  const torch::Tensor counts = torch::tensor({5.0f, 1.0f, 0.0f, 2.0f, 2.0f, 1.0f}).view({2, 3});
  SecureRandom noise = Keyed(1);
  const torch::Tensor winners = ConfidentGnmax(counts, 3.0, 0.0, 0.0, noise);
  EXPECT_EQ(winners[0].item<int64_t>(), 0);
  EXPECT_EQ(winners[1].item<int64_t>(), -1);  // max 2 < threshold 3: no answer
  // Midpoints of [-1, 1] in 4 bins: bin 0 -> -0.75; no answer -> 0.
  EXPECT_TRUE(torch::allclose(BinMidpoints(winners, 1.0, 4), torch::tensor({-0.75f, 0.0f})));
}

TEST(GnmaxTest, ThresholdNoiseDecidesNearTheThreshold) {
  // Max count exactly at the threshold: answered with probability 1/2 under any noise.
  const torch::Tensor counts =
      torch::tensor({3.0f, 0.0f}).view({1, 2}).expand({20000, 2}).contiguous();
  SecureRandom noise = Keyed(5);
  const torch::Tensor winners = ConfidentGnmax(counts, 3.0, 2.0, 0.0, noise);
  EXPECT_NEAR((winners >= 0).to(torch::kDouble).mean().item<double>(), 0.5, 0.02);
}

ShardCritics::Options SmallCritics() {
  ShardCritics::Options options;
  options.shards = 4;
  options.width = 3;
  options.hidden = 8;
  return options;
}

TEST(ShardCriticsTest, SelectedGradientsMatchEveryCriticsGradient) {
  SecureRandom init = Keyed(11);
  ShardCritics critics(SmallCritics(), init);
  const torch::Tensor x = torch::randn({6, 3}, Fixed(12));
  const torch::Tensor shard = torch::tensor({0, 3, 1, 1, 2, 0}, torch::kLong);
  const torch::Tensor all = critics.GeneratorLossGradients(x);  // [E, n, d]
  const torch::Tensor selected = critics.SelectedGeneratorLossGradients(x, shard);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_TRUE(torch::allclose(selected[i], all[shard[i].item<int64_t>()][i], 1e-5, 1e-6)) << i;
  }
  // And each is the finite-difference gradient of -D_e at x_i.
  const double h = 1e-3;
  for (int64_t j = 0; j < 3; ++j) {
    torch::Tensor plus = x.clone(), minus = x.clone();
    plus.select(1, j).add_(h);
    minus.select(1, j).add_(-h);
    const torch::Tensor fd =
        -(critics.SelectedScores(plus, shard) - critics.SelectedScores(minus, shard)) / (2 * h);
    EXPECT_TRUE(torch::allclose(fd, selected.select(1, j), 1e-2, 1e-3)) << j;
  }
}

TEST(ShardCriticsTest, AStepMovesOnlyTheCriticWhoseRowsChanged) {
  SecureRandom init_a = Keyed(21), init_b = Keyed(21);
  ShardCritics a(SmallCritics(), init_a), b(SmallCritics(), init_b);
  torch::Tensor real = torch::randn({4, 5, 3}, Fixed(22));
  const torch::Tensor fake = torch::randn({4, 5, 3}, Fixed(23));
  const torch::Tensor alpha = torch::rand({4, 5, 1}, Fixed(24));
  // Two steps: Adam's first step moves each parameter by ±lr whatever the gradient's
  // size, so only a sign change would show after one.
  for (int step = 0; step < 2; ++step) a.Step(real, fake, alpha, 10.0);
  real[2][1] += 1.0;  // a different record in shard 2 only
  for (int step = 0; step < 2; ++step) b.Step(real, fake, alpha, 10.0);
  const torch::Tensor x = torch::randn({7, 3}, Fixed(25));
  const torch::Tensor ga = a.GeneratorLossGradients(x), gb = b.GeneratorLossGradients(x);
  for (int64_t e = 0; e < 4; ++e) {
    EXPECT_EQ(torch::equal(ga[e], gb[e]), e != 2) << e;
  }
}

TEST(ShardCriticsTest, ShardsPartitionTheRows) {
  SecureRandom noise = Keyed(1);
  const std::vector<torch::Tensor> shards = AssignShards(10, 3, noise);
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].size(0), 4);
  EXPECT_EQ(shards[1].size(0), 3);
  EXPECT_EQ(shards[2].size(0), 3);
  const torch::Tensor all = std::get<0>(torch::cat(shards).sort());
  EXPECT_TRUE(torch::equal(all, torch::arange(10, torch::kLong)));
  const torch::Tensor batches = SampleShardBatches(shards, 2, noise);
  for (int64_t e = 0; e < 3; ++e) {
    for (int64_t i = 0; i < 2; ++i) {
      EXPECT_TRUE(torch::isin(batches[e][i], shards[e]).item<bool>());
    }
  }
}

// Two parties that differ in one record, with identical secrets and noise streams.
class EnsemblePartyTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<PartyModel> Make(const torch::Tensor& table, uint64_t noise_seed = 99) {
    v1::ModelConfig model;
    model.add_feature_hidden(16);
    model.set_feature_dim(8);
    EXPECT_TRUE(ResolveModelConfig(&model).ok());
    v1::TrainingConfig training;
    training.set_batch_size(16);
    EXPECT_TRUE(ResolveTrainingConfig(&training).ok());
    auto party = std::make_unique<PartyModel>("p", model, training, "secret-secret-secret",
                                              "party-secret", table);
    PartyPrivacy privacy;
    privacy.mode = GetParam() == "gswgan" ? v1::PrivacyConfig::gswgan : v1::PrivacyConfig::pate;
    privacy.noise_multiplier = 0.5;
    privacy.noise = PartyNoise::Derived(absl::StrCat("ensemble-test-noise-", noise_seed));
    privacy.ensemble.set_shards(4);
    privacy.ensemble.set_shard_hidden(8);
    privacy.ensemble.set_shard_batch(8);
    privacy.ensemble.set_vote_top_k(2);
    privacy.ensemble.set_vote_clip(1.0);
    privacy.ensemble.set_vote_threshold(0.5);
    privacy.ensemble.mutable_experimental()->set_vote_aggregation(
        GetParam() == "gnmax" ? v1::ExperimentalEnsembleConfig::gnmax
                              : v1::ExperimentalEnsembleConfig::threshold);
    privacy.ensemble.mutable_experimental()->set_projection_dim(3);
    privacy.ensemble.mutable_experimental()->set_gnmax_bins(4);
    EXPECT_TRUE(party->SetPrivacy(std::move(privacy)).ok());
    return party;
  }
};

TEST_P(EnsemblePartyTest, OnlyChargedReleasesDependOnRealRows) {
  const torch::Tensor table = torch::rand({64, 5}, Fixed(1));
  torch::Tensor other = table.clone();
  other[17] = torch::rand({5}, Fixed(2));
  auto a = Make(table), b = Make(other);
  for (int64_t round = 0; round < 2; ++round) {
    for (int64_t c = 0; c < 2; ++c) {
      const int64_t step = round * 2 + c;
      const torch::Tensor fake = torch::rand({16, 5}, Fixed(100 + step));
      auto fa = a->CriticFeatures(step, fake);
      auto fb = b->CriticFeatures(step, fake);
      ASSERT_TRUE(fa.ok() && fb.ok());
      // Synthetic rows' features: identical (feat never trains on real rows).
      EXPECT_TRUE(torch::equal(fa->second, fb->second));
      EXPECT_EQ(fa->first.sizes(), (std::vector<int64_t>{16, 8}));
      // The curator's gradient for the real rows differs wildly: it must have no effect.
      const torch::Tensor grad_fake = torch::randn({16, 8}, Fixed(200 + step));
      ASSERT_TRUE(a->CriticUpdate(step, torch::randn({16, 8}, Fixed(300)), grad_fake).ok());
      ASSERT_TRUE(b->CriticUpdate(step, torch::randn({16, 8}, Fixed(301)) * 100, grad_fake).ok());
    }
    const torch::Tensor slice = torch::rand({16, 5}, Fixed(400 + round));
    EXPECT_TRUE(
        torch::equal(a->GeneratorFeatures(round, slice), b->GeneratorFeatures(round, slice)));
    const torch::Tensor grad_h = torch::randn({16, 8}, Fixed(500 + round));
    auto ga = a->SliceGradient(round, grad_h);
    auto gb = b->SliceGradient(round, grad_h);
    ASSERT_TRUE(ga.ok() && gb.ok());
    EXPECT_EQ(ga->sizes(), (std::vector<int64_t>{16, 5}));
    EXPECT_TRUE(torch::all(torch::isfinite(*ga)).item<bool>());
    if (GetParam() == "gswgan") {
      // Only rows that drew the changed record's shard can differ.
      const int64_t differing = (*ga != *gb).any(1).sum().item<int64_t>();
      EXPECT_LT(differing, 16);
    }
  }
  for (size_t p = 0; p < a->feat()->parameters().size(); ++p) {
    EXPECT_TRUE(torch::equal(a->feat()->parameters()[p], b->feat()->parameters()[p]));
  }
}

TEST_P(EnsemblePartyTest, RefusesAnUpdateWithoutAPendingStep) {
  auto party = Make(torch::rand({50, 5}, Fixed(3)));
  const torch::Tensor fake = torch::rand({16, 5}, Fixed(4));
  ASSERT_TRUE(party->CriticFeatures(0, fake).ok());
  ASSERT_TRUE(party->CriticUpdate(0, torch::zeros({16, 8}), torch::zeros({16, 8})).ok());
  // A pending-step mismatch is refused rather than silently mixed up.
  EXPECT_FALSE(party->CriticUpdate(0, torch::zeros({16, 8}), torch::zeros({16, 8})).ok());
}

INSTANTIATE_TEST_SUITE_P(Modes, EnsemblePartyTest, ::testing::Values("gswgan", "pate", "gnmax"));

}  // namespace
}  // namespace vfsynth
