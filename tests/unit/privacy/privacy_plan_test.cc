// The run's privacy plan: every daemon resolves the same one from the same settings,
// names the first setting where two differ, and states the ε against each observer.
#include "common/privacy/privacy_plan.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/config/config.h"
#include "common/privacy/accountant.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

v1::PrivacyConfig Settings(v1::PrivacyConfig::Mode mode, double epsilon) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(mode);
  if (mode != v1::PrivacyConfig::none) privacy.set_epsilon(epsilon);
  privacy.set_ledger("party-local.ledger");
  EXPECT_TRUE(ResolvePrivacyConfig(&privacy).ok());
  return privacy;
}

// Adult's training split, K = 3, B = 256, one critic step per round.
v1::TrainingConfig Training(int rounds) {
  v1::TrainingConfig training;
  training.set_batch_size(256);
  training.set_rounds(rounds);
  training.set_n_critic(1);
  return training;
}

v1::PrivacyPlan Plan(const v1::PrivacyConfig& privacy, int rounds = 400, int parties = 3,
                     int64_t records = 26048) {
  absl::StatusOr<v1::PrivacyPlan> plan =
      ResolvePrivacyPlan(privacy, Training(rounds), parties, records);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : v1::PrivacyPlan();
}

TEST(PrivacyPlanTest, SameSettingsGiveTheSamePlanWithoutTheLedgerPath) {
  v1::PrivacyConfig other = Settings(v1::PrivacyConfig::strict, 10);
  other.set_ledger("another-party.ledger");
  const v1::PrivacyPlan a = Plan(Settings(v1::PrivacyConfig::strict, 10));
  const v1::PrivacyPlan b = Plan(other);
  EXPECT_TRUE(CheckSamePlan(a, "the curator", b, "party 'bank'").ok());
  EXPECT_EQ(PlanDigest(a), PlanDigest(b));
  EXPECT_EQ(PlanDigest(a).size(), 64u);
  EXPECT_TRUE(a.privacy().ledger().empty());
  EXPECT_NEAR(Guarantee(a, Observer::kPublished).epsilon_planned(), 10, 1e-3);
}

TEST(PrivacyPlanTest, APartyAtAnotherEpsilonIsRefusedNamingPartyAndSetting) {
  const v1::PrivacyPlan curator = Plan(Settings(v1::PrivacyConfig::strict, 10));
  const v1::PrivacyPlan bank = Plan(Settings(v1::PrivacyConfig::strict, 5));
  const absl::Status status = CheckSamePlan(curator, "the curator", bank, "party 'bank'");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("party 'bank' plans privacy.epsilon = 5"),
                    HasSubstr("the curator plans 10")));
  EXPECT_NE(PlanDigest(curator), PlanDigest(bank));
}

TEST(PrivacyPlanTest, EverySettingTheJointEpsilonAssumesIsCompared) {
  const v1::PrivacyConfig base = Settings(v1::PrivacyConfig::strict, 10);
  const v1::PrivacyPlan reference = Plan(base);
  struct Case {
    std::string setting;
    v1::PrivacyPlan plan;
  };
  v1::PrivacyConfig clip = base;
  clip.set_clip_norm(2);
  v1::PrivacyConfig feature_clip = base;
  feature_clip.set_feature_clip_norm(0.5);
  v1::PrivacyConfig delta = base;
  delta.set_delta(1e-6);
  v1::PrivacyConfig conversion = base;
  conversion.mutable_experimental()->set_conversion(v1::ExperimentalPrivacyConfig::classic);
  v1::PrivacyConfig mode = Settings(v1::PrivacyConfig::pate, 10);
  v1::PrivacyConfig against = base;
  against.set_epsilon_budget_against_parties(1e6);
  for (const Case& c :
       {Case{"privacy.mode", Plan(mode)}, Case{"privacy.delta", Plan(delta)},
        Case{"privacy.clip_norm", Plan(clip)},
        Case{"privacy.feature_clip_norm", Plan(feature_clip)},
        Case{"privacy.experimental.conversion", Plan(conversion)},
        Case{"privacy.epsilon_budget_against_parties", Plan(against)},
        Case{"parties", Plan(base, 400, 4)}, Case{"records", Plan(base, 400, 3, 26000)},
        Case{"rounds", Plan(base, 401)}}) {
    const absl::Status status = CheckSamePlan(reference, "the curator", c.plan, "party 'insurer'");
    EXPECT_THAT(std::string(status.message()), HasSubstr(absl::StrCat("plans ", c.setting, " = ")))
        << c.setting;
  }
}

TEST(PrivacyPlanTest, StrictIsAmplifiedAgainstTheCuratorButNotAgainstParties) {
  const v1::PrivacyPlan plan = Plan(Settings(v1::PrivacyConfig::strict, 10));
  for (Observer observer : kObservers) {
    EXPECT_TRUE(Guarantee(plan, observer).has_epsilon_planned()) << ObserverName(observer);
    EXPECT_EQ(Guarantee(plan, observer).observer(), ObserverName(observer));
  }
  const double published = Guarantee(plan, Observer::kPublished).epsilon_planned();
  EXPECT_EQ(Guarantee(plan, Observer::kCurator).epsilon_planned(), published);
  const double parties = Guarantee(plan, Observer::kOtherParty).epsilon_planned();
  EXPECT_EQ(Guarantee(plan, Observer::kCuratorWithParty).epsilon_planned(), parties);
  // q = 1 instead of 256/26048: far weaker, and shown as such.
  EXPECT_GT(parties, 20 * published);
}

TEST(PrivacyPlanTest, DpsgdProtectsOnlyThePublishedOutputAndVflganNothing) {
  const v1::PrivacyPlan dpsgd = Plan(Settings(v1::PrivacyConfig::dpsgd, 10));
  EXPECT_NEAR(Guarantee(dpsgd, Observer::kPublished).epsilon_planned(), 10, 1e-3);
  for (Observer observer :
       {Observer::kCurator, Observer::kOtherParty, Observer::kCuratorWithParty}) {
    EXPECT_FALSE(Guarantee(dpsgd, observer).has_epsilon_planned()) << ObserverName(observer);
    EXPECT_THAT(Guarantee(dpsgd, observer).not_dp(), HasSubstr("un-noised"));
    EXPECT_THAT(DescribeGuarantee(Guarantee(dpsgd, observer), 1e-5), HasSubstr("not DP"));
  }
  EXPECT_GT(dpsgd.shared_critic_noise_multiplier(), 0);
  for (const v1::PrivacyConfig::Mode mode : {v1::PrivacyConfig::vflgan, v1::PrivacyConfig::none}) {
    const v1::PrivacyPlan plan = Plan(Settings(mode, 10));
    for (Observer observer : kObservers) {
      EXPECT_FALSE(Guarantee(plan, observer).has_epsilon_planned())
          << mode << " " << ObserverName(observer);
      EXPECT_FALSE(Guarantee(plan, observer).not_dp().empty()) << mode;
    }
  }
}

TEST(PrivacyPlanTest, EpsilonSpentGrowsToThePlannedFigure) {
  const v1::PrivacyPlan plan = Plan(Settings(v1::PrivacyConfig::gswgan, 10), 40);
  for (Observer observer : kObservers) {
    auto start = EpsilonAfter(plan, observer, 0);
    auto half = EpsilonAfter(plan, observer, 20);
    auto end = EpsilonAfter(plan, observer, 40);
    ASSERT_TRUE(start.ok() && half.ok() && end.ok());
    EXPECT_EQ(**start, 0);
    EXPECT_GT(**half, 0);
    EXPECT_LT(**half, **end);
    EXPECT_DOUBLE_EQ(**end, Guarantee(plan, observer).epsilon_planned());
  }
}

TEST(PrivacyPlanTest, TheBudgetAgainstPartiesIsEnforced) {
  v1::PrivacyConfig strict = Settings(v1::PrivacyConfig::strict, 10);
  const double against = Guarantee(Plan(strict), Observer::kOtherParty).epsilon_planned();
  strict.set_epsilon_budget_against_parties(against * 1.01);
  EXPECT_TRUE(CheckPlanBudgets(Plan(strict)).ok());
  strict.set_epsilon_budget_against_parties(against * 0.99);
  const absl::Status over = CheckPlanBudgets(Plan(strict));
  EXPECT_EQ(over.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(over.message()),
              AllOf(HasSubstr("against other parties"),
                    HasSubstr("privacy.epsilon_budget_against_parties")));
  for (const v1::PrivacyConfig::Mode mode : {v1::PrivacyConfig::dpsgd, v1::PrivacyConfig::vflgan}) {
    v1::PrivacyConfig settings = Settings(mode, 10);
    settings.set_epsilon_budget_against_parties(1e9);
    const absl::Status refused = CheckPlanBudgets(Plan(settings));
    EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << mode;
    EXPECT_THAT(std::string(refused.message()),
                AllOf(HasSubstr(absl::StrCat("mode '", v1::PrivacyConfig::Mode_Name(mode), "'")),
                      HasSubstr("gives no guarantee against other parties")));
  }
}

// The start-up breakdown: the marginal release (one-off) and the critic releases each
// alone, against the published output; they compose to the planned ε, below their sum.
TEST(PrivacyPlanTest, BreaksThePublishedEpsilonIntoOneOffAndCriticReleases) {
  v1::TrainingConfig training = Training(300);
  training.set_marginal_weight(1);
  ASSERT_TRUE(ResolveTrainingConfig(&training).ok());
  const v1::PrivacyConfig settings = Settings(v1::PrivacyConfig::strict, 10);
  auto plan = ResolvePrivacyPlan(settings, training, 3, 30000);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_GT(plan->marginal_noise_multiplier(), 0);
  const auto breakdown = PublishedEpsilonBreakdown(*plan);
  ASSERT_TRUE(breakdown.ok()) << breakdown.status();
  ASSERT_TRUE(breakdown->has_value());
  const double planned = Guarantee(*plan, Observer::kPublished).epsilon_planned();
  EXPECT_GT((*breakdown)->one_off, 0);
  EXPECT_LT((*breakdown)->one_off, planned);
  EXPECT_GT((*breakdown)->critic, (*breakdown)->one_off);
  EXPECT_LT((*breakdown)->critic, planned);
  EXPECT_LT(planned, (*breakdown)->one_off + (*breakdown)->critic);
  EXPECT_THAT(DescribeEpsilonBreakdown(*plan),
              HasSubstr("one-off releases alone (marginals) come to"));

  const auto none = PublishedEpsilonBreakdown(Plan(Settings(v1::PrivacyConfig::none, 10)));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// Before round 0 every party has charged (and then makes) its one-off releases: what
// status reports as spent from then on counts them, against every observer.
TEST(PrivacyPlanTest, EpsilonSpentBeforeTheFirstRoundIsTheOneOffReleases) {
  v1::TrainingConfig training = Training(300);
  training.set_marginal_weight(1);
  ASSERT_TRUE(ResolveTrainingConfig(&training).ok());
  auto plan = ResolvePrivacyPlan(Settings(v1::PrivacyConfig::strict, 10), training, 3, 30000);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto breakdown = PublishedEpsilonBreakdown(*plan);
  ASSERT_TRUE(breakdown.ok() && breakdown->has_value());
  for (Observer observer : kObservers) {
    const auto start = EpsilonAfter(*plan, observer, 0);
    ASSERT_TRUE(start.ok() && start->has_value()) << ObserverName(observer);
    EXPECT_GT(**start, 0) << ObserverName(observer);
    EXPECT_LT(**start, Guarantee(*plan, observer).epsilon_planned()) << ObserverName(observer);
  }
  EXPECT_DOUBLE_EQ(**EpsilonAfter(*plan, Observer::kPublished, 0), (*breakdown)->one_off);
  const auto own = OwnReleasesEpsilonAfter(*plan, 0);
  ASSERT_TRUE(own.ok() && own->has_value());
  EXPECT_GT(**own, 0);
  EXPECT_LT(**own, **OwnReleasesEpsilonAfter(*plan, 300));
}

TEST(PrivacyPlanTest, AnExplicitNoiseMultiplierOverTheJointBudgetIsRefused) {
  v1::PrivacyConfig settings = Settings(v1::PrivacyConfig::strict, 10);
  const double z = Plan(settings).noise_multiplier();
  settings.set_noise_multiplier(z * 0.9);
  EXPECT_EQ(CheckPlanBudgets(Plan(settings)).code(), absl::StatusCode::kFailedPrecondition);
  settings.set_noise_multiplier(z * 1.1);
  EXPECT_TRUE(CheckPlanBudgets(Plan(settings)).ok());
}

TEST(PrivacyPlanTest, TooFewRecordsForTheBatchCannotBePlanned) {
  EXPECT_FALSE(
      ResolvePrivacyPlan(Settings(v1::PrivacyConfig::strict, 10), Training(10), 3, 100).ok());
}

}  // namespace
}  // namespace vfsynth

namespace vfsynth {
namespace {

// A party's privacy settings of horizontal mode `mode`, resolved.
v1::PrivacyConfig HorizontalPrivacy(v1::PrivacyConfig::Mode mode, double epsilon) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(mode);
  privacy.set_epsilon(epsilon);
  privacy.set_ledger("party-local.ledger");
  EXPECT_TRUE(ResolveHorizontalPrivacy(&privacy).ok());
  return privacy;
}

v1::PrivacyConfig SignDsSettings(double epsilon) {
  return HorizontalPrivacy(v1::PrivacyConfig::signds, epsilon);
}

v1::HorizontalConfig Resolved(v1::HorizontalConfig horizontal, v1::PrivacyConfig::Mode mode) {
  EXPECT_TRUE(ResolveHorizontalConfig(&horizontal, mode).ok());
  return horizontal;
}

v1::HorizontalConfig HorizontalSettings(int cap) {
  v1::HorizontalConfig horizontal;
  horizontal.set_participation_cap(cap);
  return Resolved(horizontal, v1::PrivacyConfig::signds);
}

TEST(HorizontalPlanTest, EveryObserverGetsTheUsersEpsilonAndRoundsFollowTheCaps) {
  // Adult as DP-FED-WAE runs it: one row a user, each user once, 10 users a round.
  auto plan = ResolveHorizontalPlan(SignDsSettings(8), HorizontalSettings(1), v1::TrainingConfig(),
                                    3, 32561);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->rounds(), 3256);
  EXPECT_EQ(plan->records(), 32561);
  EXPECT_EQ(plan->batch_size(), 10);
  EXPECT_TRUE(plan->privacy().ledger().empty());
  ASSERT_EQ(plan->guarantees_size(), 4);
  for (const v1::ObserverGuarantee& guarantee : plan->guarantees()) {
    EXPECT_DOUBLE_EQ(guarantee.epsilon_planned(), 8.0) << guarantee.observer();
  }
  EXPECT_DOUBLE_EQ(EpsilonPerAnswer(*plan), 8.0);
  EXPECT_TRUE(CheckPlanBudgets(*plan).ok());

  // Ten answers a user at 0.8 each: the worst-off user's epsilon grows with the rounds
  // until its cap, then stays.
  auto capped = ResolveHorizontalPlan(SignDsSettings(8), HorizontalSettings(10),
                                      v1::TrainingConfig(), 3, 1000);
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->rounds(), 1000);
  EXPECT_DOUBLE_EQ(EpsilonPerAnswer(*capped), 0.8);
  EXPECT_DOUBLE_EQ(**EpsilonAfter(*capped, Observer::kCurator, 3), 2.4);
  EXPECT_DOUBLE_EQ(**EpsilonAfter(*capped, Observer::kOtherParty, 500), 8.0);
  EXPECT_DOUBLE_EQ(**OwnReleasesEpsilonAfter(*capped, 0), 0.0);
  EXPECT_FALSE(PublishedEpsilonBreakdown(*capped)->has_value());
}

TEST(HorizontalPlanTest, MoreRoundsThanTheCapsAllowAreRefused) {
  v1::TrainingConfig training;
  training.set_rounds(101);
  const auto plan =
      ResolveHorizontalPlan(SignDsSettings(8), HorizontalSettings(1), training, 2, 1000);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("1000 users answer at most 1 round(s) each"));
  training.set_rounds(100);
  EXPECT_TRUE(
      ResolveHorizontalPlan(SignDsSettings(8), HorizontalSettings(1), training, 2, 1000).ok());
  // A party that holds another epsilon plans another plan, refused naming it.
  auto ours = ResolveHorizontalPlan(SignDsSettings(8), HorizontalSettings(1), training, 2, 1000);
  auto theirs = ResolveHorizontalPlan(SignDsSettings(4), HorizontalSettings(1), training, 2, 1000);
  EXPECT_THAT(CheckSamePlan(*ours, "the curator", *theirs, "party 'b'").message(),
              HasSubstr("privacy.epsilon"));
}

v1::PrivacyConfig DpFedAvgSettings(double epsilon) {
  return HorizontalPrivacy(v1::PrivacyConfig::dpfedavg, epsilon);
}

v1::HorizontalConfig DpFedAvgHorizontal(int users_per_round) {
  v1::HorizontalConfig horizontal;
  horizontal.set_users_per_round(users_per_round);
  return Resolved(horizontal, v1::PrivacyConfig::dpfedavg);
}

TEST(HorizontalPlanTest, DpFedAvgCalibratesItsNoiseToTheBudgetAgainstEveryObserver) {
  // 1000 users a round of 32561 (each drawn at rate 1000 / 32561), 300 rounds.
  auto plan = ResolveHorizontalPlan(DpFedAvgSettings(8), DpFedAvgHorizontal(1000),
                                    v1::TrainingConfig(), 3, 32561);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->rounds(), 300);
  EXPECT_GT(plan->noise_multiplier(), 0);
  const privacy::StepMechanism mechanism = DpFedAvgMechanism(*plan);
  EXPECT_EQ(mechanism.sampler, privacy::Sampler::kPoisson);
  EXPECT_DOUBLE_EQ(mechanism.sample_rate, 1000.0 / 32561);
  const auto spent = privacy::ComputeEpsilon(mechanism, 300, 1e-5, privacy::Conversion::kImproved);
  ASSERT_TRUE(spent.ok()) << spent.status();
  EXPECT_LE(spent->epsilon, 8.0);
  EXPECT_GT(spent->epsilon, 8.0 * (1 - 1e-4));
  ASSERT_EQ(plan->guarantees_size(), 4);
  for (const v1::ObserverGuarantee& guarantee : plan->guarantees()) {
    EXPECT_DOUBLE_EQ(guarantee.epsilon_planned(), spent->epsilon) << guarantee.observer();
  }
  EXPECT_TRUE(CheckPlanBudgets(*plan).ok());
  EXPECT_LT(**EpsilonAfter(*plan, Observer::kCurator, 150), spent->epsilon);
  EXPECT_DOUBLE_EQ(**EpsilonAfter(*plan, Observer::kCurator, 0), 0.0);
  EXPECT_DOUBLE_EQ(**OwnReleasesEpsilonAfter(*plan, 300), spent->epsilon);
}

TEST(HorizontalPlanTest, DpFedAvgWithTooLittleNoiseOrMoreUsersARoundThanTheRunHoldsIsRefused) {
  v1::PrivacyConfig privacy = DpFedAvgSettings(1);
  privacy.set_noise_multiplier(0.3);
  auto plan =
      ResolveHorizontalPlan(privacy, DpFedAvgHorizontal(100), v1::TrainingConfig(), 2, 1000);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_DOUBLE_EQ(plan->noise_multiplier(), 0.3);
  EXPECT_EQ(CheckPlanBudgets(*plan).code(), absl::StatusCode::kFailedPrecondition);
  auto crowded = ResolveHorizontalPlan(DpFedAvgSettings(8), DpFedAvgHorizontal(1001),
                                       v1::TrainingConfig(), 2, 1000);
  EXPECT_EQ(crowded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(crowded.status().message(), HasSubstr("sampling rate would be above 1"));
}

}  // namespace
}  // namespace vfsynth
