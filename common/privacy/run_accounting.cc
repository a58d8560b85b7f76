#include "common/privacy/run_accounting.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/status_macros.h"
#include "common/privacy/calibrator.h"
#include "common/privacy/mode_traits.h"

namespace vfsynth::privacy {
namespace {

constexpr char kModeNames[] = "none, dpsgd, strict, vflgan, gswgan, pate, marginals";

double BatchRate(const RunShape& shape) {
  return static_cast<double>(shape.batch_size) / static_cast<double>(shape.records);
}

int JointReleases(Mode mode, int parties) {
  const ModeTraits& traits = TraitsOf(mode);
  return traits.releases_per_party_step * parties + traits.curator_releases_per_step;
}

StepMechanism Mechanism(int releases, double z, const RunShape& shape) {
  StepMechanism mechanism;
  mechanism.noise_multipliers.assign(releases, z);
  mechanism.sample_rate = BatchRate(shape);
  mechanism.sampler = Sampler::kWithoutReplacement;
  return mechanism;
}

bool ReleasesMarginals(Mode mode, const RunShape& shape) {
  return TraitsOf(mode).may_release_marginals && shape.marginal_noise_multiplier > 0;
}

// One histogram release per party over all its records: no amplification. With label
// pairs, also the holder's label release and the other parties' label-pair tables; a
// single party's view (parties == 1) counts both, since it may be either.
StepMechanism MarginalMechanism(int parties, const RunShape& shape) {
  const bool label_pairs = shape.label_epsilon > 0;
  const int tables = label_pairs ? std::max(parties - 1, 1) : 0;
  StepMechanism mechanism =
      WithoutAmplification(Mechanism(parties + tables, shape.marginal_noise_multiplier, shape));
  if (label_pairs) mechanism.randomized_responses.push_back(shape.label_epsilon);
  return mechanism;
}

int64_t KeyOffset(Mode mode, const RunShape& shape) {
  return ReleasesMarginals(mode, shape) ? 1 : 0;
}

}  // namespace

absl::StatusOr<Mode> ParseMode(const std::string& name) {
  Mode mode = v1::PrivacyConfig::MODE_UNSPECIFIED;
  v1::PrivacyConfig::Mode_Parse(name, &mode);
  if (!ValidateMode(mode).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("privacy mode '", name, "' is not one of ", kModeNames));
  }
  return mode;
}

bool SharedCriticSeesOnlyReleases(Mode mode) {
  return TraitsOf(mode).shared_critic_sees_only_releases;
}

bool IsEnsembleMode(Mode mode) { return TraitsOf(mode).ensemble(); }

const std::string& ModeName(Mode mode) { return v1::PrivacyConfig::Mode_Name(mode); }

bool IsHorizontalMode(Mode mode) { return TraitsOf(mode).horizontal(); }

absl::Status ValidateMode(Mode mode) {
  if (IsHorizontalMode(mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "privacy mode '", ModeName(mode), "' is the horizontal topology's, not one of the GAN's"));
  }
  if (mode == v1::PrivacyConfig::MODE_UNSPECIFIED || !v1::PrivacyConfig::Mode_IsValid(mode)) {
    return absl::InvalidArgumentError(absl::StrCat("privacy mode is not one of ", kModeNames));
  }
  return absl::OkStatus();
}

ReleaseNoise SplitReleaseNoise(Mode mode, double z, const RunShape& shape) {
  if (TraitsOf(mode).curator_releases_per_step == 0 || shape.shared_critic_share <= 0 ||
      shape.parties < 1) {
    return {z, z};
  }
  // K + 1 releases at z carry (K + 1)/z² in all; D_s gets `share` of it, each party
  // (1 - share)/K.
  const double releases = shape.parties + 1.0;
  const double share = shape.shared_critic_share;
  // The even split gives back z itself, bit for bit: ledgers of runs from before the
  // split compare their charges exactly.
  if (std::abs(share * releases - 1) < 1e-12) return {z, z};
  ReleaseNoise noise;
  noise.shared_critic = z / std::sqrt(share * releases);
  noise.party = z * std::sqrt(shape.parties / ((1 - share) * releases));
  return noise;
}

std::string DescribeReleaseNoise(Mode mode, double z, const RunShape& shape) {
  if (TraitsOf(mode).curator_releases_per_step == 0 || shape.shared_critic_share <= 0) return "";
  const ReleaseNoise noise = SplitReleaseNoise(mode, z, shape);
  return absl::StrFormat(" (split: D_s %.4f, each party %.4f; shared_critic_budget_share %g)",
                         noise.shared_critic, noise.party, shape.shared_critic_share);
}

StepMechanism PartyMechanism(Mode mode, double z, const RunShape& shape) {
  return Mechanism(TraitsOf(mode).releases_per_party_step, SplitReleaseNoise(mode, z, shape).party,
                   shape);
}

StepMechanism JointMechanism(Mode mode, double z, const RunShape& shape) {
  StepMechanism mechanism = Mechanism(JointReleases(mode, shape.parties), z, shape);
  if (TraitsOf(mode).curator_releases_per_step > 0) {
    const ReleaseNoise noise = SplitReleaseNoise(mode, z, shape);
    mechanism.noise_multipliers.assign(shape.parties, noise.party);
    mechanism.noise_multipliers.push_back(noise.shared_critic);
  }
  return mechanism;
}

StepMechanism WithoutAmplification(StepMechanism mechanism) {
  mechanism.sample_rate = 1.0;
  return mechanism;
}

EnsembleShape MakeEnsembleShape(Mode mode, int shards,
                                v1::ExperimentalEnsembleConfig::VoteAggregation vote_aggregation,
                                int projection_dim) {
  EnsembleShape shape;
  shape.shards = shards;
  shape.projection_dim = projection_dim;
  shape.aggregation = mode == v1::PrivacyConfig::gswgan ? RowAggregation::kGswgan
                      : vote_aggregation == v1::ExperimentalEnsembleConfig::gnmax
                          ? RowAggregation::kPateGnmax
                          : RowAggregation::kPateThreshold;
  return shape;
}

std::vector<ChargedSteps> RunReleases(Mode mode, double z, const RunShape& shape, int64_t rounds,
                                      View view) {
  if (TraitsOf(mode).ledger == Ledger::kNone) return {};
  std::vector<ChargedSteps> releases;
  const int parties = view == View::kParty ? 1 : shape.parties;
  if (rounds > 0) {
    const int64_t critic_steps = rounds * shape.n_critic;
    StepMechanism features =
        view == View::kParty ? PartyMechanism(mode, z, shape) : JointMechanism(mode, z, shape);
    if (view == View::kAgainstParties) features = WithoutAmplification(features);
    releases.push_back({features, critic_steps});
    if (IsEnsembleMode(mode)) {
      releases.push_back({RowRelease(z, shape.ensemble), rounds * parties * shape.batch_size});
    }
  }
  if (ReleasesMarginals(mode, shape)) releases.push_back({MarginalMechanism(parties, shape), 1});
  return releases;
}

absl::StatusOr<EpsilonAndOrder> RunEpsilon(Mode mode, double z, const RunShape& shape,
                                           int64_t rounds, View view, double delta,
                                           Conversion conversion) {
  return ComposedEpsilon(RunReleases(mode, z, shape, rounds, view), delta, conversion);
}

LedgerCharge CriticStepCharge(Mode mode, double z, const RunShape& shape, int64_t step) {
  LedgerCharge charge;
  charge.mechanism = JointMechanism(mode, z, shape);
  charge.key =
      (IsEnsembleMode(mode) ? step + step / shape.n_critic : step) + KeyOffset(mode, shape);
  return charge;
}

std::optional<LedgerCharge> GeneratorRoundCharge(Mode mode, double z, const RunShape& shape,
                                                 int64_t round) {
  if (!IsEnsembleMode(mode)) return std::nullopt;
  LedgerCharge charge;
  charge.key = round * (shape.n_critic + 1) + shape.n_critic + KeyOffset(mode, shape);
  charge.mechanism = RowRelease(z, shape.ensemble);
  charge.steps = static_cast<int64_t>(shape.parties) * shape.batch_size;
  return charge;
}

std::optional<LedgerCharge> MarginalReleaseCharge(Mode mode, const RunShape& shape) {
  if (!ReleasesMarginals(mode, shape)) return std::nullopt;
  LedgerCharge charge;
  charge.key = 0;
  charge.mechanism = MarginalMechanism(shape.parties, shape);
  return charge;
}

absl::StatusOr<double> CalibrateRunNoise(Mode mode, double epsilon, double delta,
                                         Conversion conversion, const RunShape& shape) {
  if (!TraitsOf(mode).draws_noise()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mode '", ModeName(mode), "' has no noise to calibrate"));
  }
  if (IsEnsembleMode(mode) || ReleasesMarginals(mode, shape)) {
    const int64_t rounds = shape.critic_steps / shape.n_critic;
    if (rounds < 1)
      return absl::InvalidArgumentError("a run needs at least one round to calibrate");
    absl::StatusOr<double> z = CalibrateNoise(
        [&](double z) -> absl::StatusOr<double> {
          ASSIGN_OR_RETURN(const EpsilonAndOrder result,
                           RunEpsilon(mode, z, shape, rounds, View::kJoint, delta, conversion));
          return result.epsilon;
        },
        epsilon);
    if (absl::IsOutOfRange(z.status()) && ReleasesMarginals(mode, shape)) {
      return absl::OutOfRangeError(
          absl::StrCat(z.status().message(), "; the marginal release (noise multiplier ",
                       shape.marginal_noise_multiplier,
                       ") is part of it: raise privacy.marginal_noise_multiplier or epsilon"));
    }
    return z;
  }
  CalibrationTarget target;
  target.epsilon = epsilon;
  target.delta = delta;
  target.sample_rate = BatchRate(shape);
  target.steps = shape.critic_steps;
  target.releases = JointReleases(mode, shape.parties);
  target.conversion = conversion;
  target.sampler = Sampler::kWithoutReplacement;
  return CalibrateNoiseMultiplier(target);
}

}  // namespace vfsynth::privacy
