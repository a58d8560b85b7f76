// Every DP release draws its randomness from a cryptographic stream: no mechanism
// accepts a LibTorch (Mersenne Twister) generator, a DP mode without its streams is
// refused, and the noises an observer can recover are on streams of their own.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <optional>
#include <type_traits>
#include <vector>

#include "common/config/config.h"
#include "common/dp/dp_sgd.h"
#include "common/dp/pate_vote.h"
#include "common/gan/batch_sampler.h"
#include "common/gan/curator_model.h"
#include "common/gan/label_pairs.h"
#include "common/gan/marginal_target.h"
#include "common/gan/party_model.h"
#include "common/gan/shard_critics.h"
#include "common/privacy/party_noise.h"
#include "common/random/random_tensors.h"

namespace vfsynth {
namespace {

using Tensors = std::vector<torch::Tensor>;

// Compile-time: a non-cryptographic generator is refused by every noise path.
static_assert(!std::is_invocable_v<decltype(&DpSgdStep), const Tensors&, const Tensors&,
                                   const DpSgdOptions&, at::Generator>);
static_assert(std::is_invocable_v<decltype(&DpSgdStep), const Tensors&, const Tensors&,
                                  const DpSgdOptions&, SecureRandom&>);
static_assert(
    !std::is_invocable_v<decltype(&DpSgdStepFactored), const Tensors&,
                         const std::vector<FactoredGradient>&, const DpSgdOptions&, at::Generator>);
static_assert(!std::is_invocable_v<decltype(&ClipAndNoiseRows), const torch::Tensor&, double,
                                   double, at::Generator>);
static_assert(std::is_invocable_v<decltype(&ClipAndNoiseRows), const torch::Tensor&, double, double,
                                  SecureRandom&>);
static_assert(!std::is_invocable_v<decltype(&RandomizedLabels), const torch::Tensor&, double,
                                   at::Generator&>);
static_assert(!std::is_invocable_v<decltype(&LabelPairCounts), const torch::Tensor&, int,
                                   const torch::Tensor&, const std::vector<OutputBlock>&, double,
                                   at::Generator>);
static_assert(!std::is_invocable_v<decltype(&MarginalTarget::FromTable), const torch::Tensor&,
                                   const std::vector<OutputBlock>&, const MarginalOptions&, double,
                                   std::optional<at::Generator>>);
static_assert(!std::is_invocable_v<decltype(&TopKStochasticSignVotes), const torch::Tensor&, int,
                                   double, at::Generator>);
static_assert(!std::is_invocable_v<decltype(&NoisyThresholdVote), const torch::Tensor&, double,
                                   double, at::Generator>);
static_assert(!std::is_invocable_v<decltype(&ConfidentGnmax), const torch::Tensor&, double, double,
                                   double, at::Generator>);
static_assert(!std::is_invocable_v<decltype(&AssignShards), int64_t, int, at::Generator>);
static_assert(
    !std::is_invocable_v<decltype(&SampleShardBatches), const Tensors&, int64_t, at::Generator>);
static_assert(!std::is_constructible_v<ShardCritics, const ShardCritics::Options&, at::Generator>);
static_assert(!std::is_invocable_v<decltype(&CuratorModel::SetSharedCriticPrivacy), CuratorModel&,
                                   double, double, at::Generator>);
static_assert(!std::is_assignable_v<decltype(PartyPrivacy::noise)&, at::Generator>);
// A copy would repeat a stream, and noise drawn twice cancels.
static_assert(!std::is_copy_constructible_v<SecureRandom>);
static_assert(!std::is_copy_assignable_v<SecureRandom>);

struct Party {
  v1::ModelConfig model;
  v1::TrainingConfig training;
  torch::Tensor table;
};

Party SmallParty() {
  Party p;
  p.model.add_feature_hidden(16);
  p.model.set_feature_dim(6);
  EXPECT_TRUE(ResolveModelConfig(&p.model).ok());
  p.training.set_batch_size(16);
  EXPECT_TRUE(ResolveTrainingConfig(&p.training).ok());
  p.table = torch::rand({64, 5}, at::make_generator<at::CPUGeneratorImpl>(1));
  return p;
}

TEST(NoiseSourceTest, ADpModeWithoutItsStreamsIsRefused) {
  const Party p = SmallParty();
  for (const v1::PrivacyConfig::Mode mode :
       {v1::PrivacyConfig::dpsgd, v1::PrivacyConfig::strict, v1::PrivacyConfig::vflgan,
        v1::PrivacyConfig::gswgan, v1::PrivacyConfig::pate}) {
    PartyModel party("p", p.model, p.training, "sampling-secret", "party-secret", p.table);
    PartyPrivacy privacy;
    privacy.mode = mode;
    privacy.noise_multiplier = 1.0;
    const absl::Status status = party.SetPrivacy(privacy);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << v1::PrivacyConfig::Mode_Name(mode);
    EXPECT_NE(status.message().find("noise"), absl::string_view::npos)
        << v1::PrivacyConfig::Mode_Name(mode);
  }
  PartyModel plain("p", p.model, p.training, "sampling-secret", "party-secret", p.table);
  EXPECT_TRUE(plain.SetPrivacy(PartyPrivacy()).ok());
}

// The curator can recompute the clean features of a synthetic slice (it resends one
// from the generator phase): the noise it then recovers must say nothing about the real
// rows' noise. Each is its own stream's output, from the first value on.
TEST(NoiseSourceTest, StrictReleasesNoiseRealAndSyntheticRowsFromSeparateStreams) {
  const Party p = SmallParty();
  PartyModel party("p", p.model, p.training, "sampling-secret", "party-secret", p.table);
  PartyPrivacy privacy;
  privacy.mode = v1::PrivacyConfig::strict;
  privacy.noise_multiplier = 0.7;
  privacy.feature_clip_norm = 1.0;
  privacy.noise = PartyNoise::Derived("strict-test");
  ASSERT_TRUE(party.SetPrivacy(privacy).ok());
  const torch::Tensor slice = torch::rand({16, 5}, at::make_generator<at::CPUGeneratorImpl>(2));
  const torch::Tensor clean_fake = party.GeneratorFeatures(0, slice);
  torch::Tensor clean_real;
  {
    torch::NoGradGuard no_grad;
    clean_real = party.feat()->forward(
        p.table.index_select(0, RealBatchIndices("sampling-secret", 64, 16, 0)));
  }
  auto released = party.CriticFeatures(0, slice);
  ASSERT_TRUE(released.ok()) << released.status();
  auto clip = [](const torch::Tensor& rows) {
    const torch::Tensor norms = rows.to(torch::kDouble).norm(2, 1, true);
    return rows.to(torch::kDouble) * torch::clamp_max(1.0 / norms, 1.0);
  };
  const double stddev = 0.7 * 2 * 1.0;
  std::shared_ptr<PartyNoise> expected = PartyNoise::Derived("strict-test");
  const torch::Tensor fake_noise = released->second.to(torch::kDouble) - clip(clean_fake);
  const torch::Tensor real_noise = released->first.to(torch::kDouble) - clip(clean_real);
  EXPECT_TRUE(torch::allclose(
      fake_noise, GaussianTensor(expected->synthetic_features, {16, 6}, stddev), 0, 1e-4));
  EXPECT_TRUE(torch::allclose(real_noise, GaussianTensor(expected->real_features, {16, 6}, stddev),
                              0, 1e-4));
}

}  // namespace
}  // namespace vfsynth
