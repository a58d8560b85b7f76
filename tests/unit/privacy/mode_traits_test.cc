// The privacy modes' policy table against what the accountant and the plan derive from it.
#include "common/privacy/mode_traits.h"

#include <gtest/gtest.h>

#include "common/privacy/run_accounting.h"

namespace vfsynth::privacy {
namespace {

RunShape Shape(int parties) {
  RunShape shape;
  shape.parties = parties;
  shape.records = 1000;
  shape.batch_size = 100;
  shape.critic_steps = 10;
  return shape;
}

TEST(ModeTraitsTest, EveryModeHasItsOwnRowAndAnUnknownModeClaimsNothing) {
  for (int value = v1::PrivacyConfig::Mode_MIN; value <= v1::PrivacyConfig::Mode_MAX; ++value) {
    if (!v1::PrivacyConfig::Mode_IsValid(value) || value == v1::PrivacyConfig::MODE_UNSPECIFIED)
      continue;
    const Mode mode = static_cast<Mode>(value);
    EXPECT_EQ(TraitsOf(mode).mode, mode) << ModeName(mode);
  }
  const ModeTraits& unknown = TraitsOf(v1::PrivacyConfig::MODE_UNSPECIFIED);
  for (Observer observer : kObservers) EXPECT_FALSE(unknown.dp_against(observer));
  EXPECT_EQ(unknown.ledger, Ledger::kNone);
}

TEST(ModeTraitsTest, ObserversWhoKnowTheBatchesGetNoAmplification) {
  for (Mode mode :
       {v1::PrivacyConfig::strict, v1::PrivacyConfig::gswgan, v1::PrivacyConfig::pate}) {
    const ModeTraits& traits = TraitsOf(mode);
    EXPECT_EQ(traits.view(Observer::kPublished).protection, Protection::kAmplified)
        << ModeName(mode);
    EXPECT_EQ(traits.view(Observer::kCurator).protection, Protection::kAmplified) << ModeName(mode);
    EXPECT_EQ(traits.view(Observer::kOtherParty).protection, Protection::kAgainstParties)
        << ModeName(mode);
    EXPECT_EQ(traits.view(Observer::kCuratorWithParty).protection, Protection::kAgainstParties)
        << ModeName(mode);
    EXPECT_TRUE(traits.shared_critic_sees_only_releases);
  }
  const ModeTraits& dpsgd = TraitsOf(v1::PrivacyConfig::dpsgd);
  EXPECT_TRUE(dpsgd.dp_against(Observer::kPublished));
  EXPECT_FALSE(dpsgd.dp_against(Observer::kCurator));
  EXPECT_FALSE(dpsgd.shared_critic_sees_only_releases);
  for (Mode mode : {v1::PrivacyConfig::none, v1::PrivacyConfig::vflgan}) {
    for (Observer observer : kObservers) {
      EXPECT_FALSE(TraitsOf(mode).dp_against(observer)) << ModeName(mode);
      EXPECT_STRNE(TraitsOf(mode).view(observer).not_dp, "") << ModeName(mode);
    }
  }
}

TEST(ModeTraitsTest, MeasuredMarginalsHoldOneEpsilonAgainstEveryObserver) {
  const ModeTraits& traits = TraitsOf(v1::PrivacyConfig::marginals);
  for (Observer observer : kObservers) {
    EXPECT_EQ(traits.view(observer).protection, Protection::kMeasured);
    EXPECT_TRUE(traits.dp_against(observer));
  }
  EXPECT_EQ(traits.ledger, Ledger::kMeasurements);
  EXPECT_TRUE(traits.draws_noise());
  EXPECT_FALSE(traits.horizontal());
  EXPECT_FALSE(traits.may_release_marginals);  // the GAN modes' release; it measures its own
  EXPECT_FALSE(traits.noises_features());
  EXPECT_TRUE(ValidateMode(v1::PrivacyConfig::marginals).ok());
}

TEST(ModeTraitsTest, TheStepsReleasesFollowTheTable) {
  // K = 3 parties: dpsgd K gradients and D_s's, strict features and gradients of each
  // party, vflgan and the ensembles one release per party, none nothing.
  const RunShape shape = Shape(3);
  EXPECT_EQ(JointMechanism(v1::PrivacyConfig::dpsgd, 1.0, shape).noise_multipliers.size(), 4u);
  EXPECT_EQ(JointMechanism(v1::PrivacyConfig::strict, 1.0, shape).noise_multipliers.size(), 6u);
  EXPECT_EQ(JointMechanism(v1::PrivacyConfig::vflgan, 1.0, shape).noise_multipliers.size(), 3u);
  EXPECT_EQ(JointMechanism(v1::PrivacyConfig::pate, 1.0, shape).noise_multipliers.size(), 3u);
  EXPECT_EQ(JointMechanism(v1::PrivacyConfig::none, 1.0, shape).noise_multipliers.size(), 0u);
  EXPECT_EQ(PartyMechanism(v1::PrivacyConfig::strict, 1.0, shape).noise_multipliers.size(), 2u);
  EXPECT_TRUE(RunReleases(v1::PrivacyConfig::none, 1.0, shape, 5, View::kJoint).empty());
  EXPECT_TRUE(IsHorizontalMode(v1::PrivacyConfig::signds));
  EXPECT_TRUE(IsHorizontalMode(v1::PrivacyConfig::dpfedavg));
  EXPECT_FALSE(IsHorizontalMode(v1::PrivacyConfig::strict));
  EXPECT_TRUE(IsEnsembleMode(v1::PrivacyConfig::gswgan));
  EXPECT_FALSE(IsEnsembleMode(v1::PrivacyConfig::strict));
}

}  // namespace
}  // namespace vfsynth::privacy
