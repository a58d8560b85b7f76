#ifndef VFSYNTH_COMMON_PRIVACY_MODE_TRAITS_H_
#define VFSYNTH_COMMON_PRIVACY_MODE_TRAITS_H_

#include <array>

#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// Who sees what: the published G and synthetic table; the curator; another party
// (it draws the same batches, so no amplification by sampling); the curator with one
// party colluding (the curator's view plus the batches).
enum class Observer { kPublished, kCurator, kOtherParty, kCuratorWithParty };
inline constexpr Observer kObservers[] = {Observer::kPublished, Observer::kCurator,
                                          Observer::kOtherParty, Observer::kCuratorWithParty};

namespace privacy {

using Mode = v1::PrivacyConfig::Mode;

// How a run protects a person against one observer.
enum class Protection {
  kAmplified,       // the releases' ε, amplified by the batches the observer does not know
  kAgainstParties,  // the releases' ε without amplification (the observer knows the batches)
  kPerUser,         // the horizontal modes: every user's own ε, whoever observes
  kMeasured,        // marginals: the measurements' ε; each histogram carries noise every
                    // holder drew, so it holds against anyone who lacks one holder's noise
  kNotDp,
};

// What a party sanitises before anything computed from its batch of real rows leaves it.
enum class PartyRelease {
  kNothing,              // none: clean features and gradients
  kCriticGradient,       // dpsgd: its critic's clipped, noised gradient
  kFeaturesAndGradient,  // strict: its real-row features and its critic's gradient
  kFirstLayerGradient,   // vflgan: the feature nets' first-layer gradient only
  kShardEnsemble,        // gswgan, pate: features of a shared batch and its shard critics' votes
  kUserReports,          // signds: each drawn user's local randomised report
  kNoisedUpdateSum,      // dpfedavg: the party's clipped, noised sum of its users' updates
  kHistograms,           // marginals: its noised histograms, and its noise in the cross ones
};

// What a party's ledger counts, and so what a charge is.
enum class Ledger {
  kNone,         // no DP claim: nothing is charged
  kCriticSteps,  // each critic step's releases (and the one-off marginal release) before they leave
  kUserAnswers,  // each user's answers under its participation cap
  kRounds,       // each round's noised sum
  kMeasurements, // the run's measurements, once, before the first leaves
};

// A privacy mode's policy, in one row: the settings' enum says which mode, this says what
// the mode means for every observer, for the curator's shared critic, for what a party
// releases and what it charges.
struct ModeTraits {
  Mode mode;
  v1::Topology topology;
  // Per observer, in kObservers order: the protection, and, where it is none, why.
  struct View {
    Protection protection;
    const char* not_dp;
  };
  std::array<View, 4> views;
  PartyRelease party_release;
  Ledger ledger;
  // The curator's shared critic D_s sees only features the parties released with noise,
  // so whatever it computes (its loss included) is post-processing.
  bool shared_critic_sees_only_releases;
  // Gaussian releases per party per critic step, and the curator's own (dpsgd noises D_s).
  int releases_per_party_step;
  int curator_releases_per_step;
  // The parties may release their one-hot marginals once before the rounds, and with them
  // the label pairs (the label's dependence on the other parties' columns).
  bool may_release_marginals;
  bool may_release_label_pairs;

  bool dp_against(Observer observer) const {
    return views[static_cast<int>(observer)].protection != Protection::kNotDp;
  }
  const View& view(Observer observer) const { return views[static_cast<int>(observer)]; }
  bool ensemble() const { return party_release == PartyRelease::kShardEnsemble; }
  // A party's releases carry noise it draws (and so must never be drawn twice).
  bool draws_noise() const { return party_release != PartyRelease::kNothing; }
  // A party's real-row features leave it noised (strict, the ensembles).
  bool noises_features() const {
    return party_release == PartyRelease::kFeaturesAndGradient ||
           party_release == PartyRelease::kShardEnsemble;
  }
  // A party's critic is trained with DP-SGD on its own rows (dpsgd, strict).
  bool dp_sgd_party_critic() const {
    return party_release == PartyRelease::kCriticGradient ||
           party_release == PartyRelease::kFeaturesAndGradient;
  }
  bool horizontal() const { return topology == v1::Topology::horizontal; }
};

// The row of `mode`; an unset or unknown mode gets a row with no DP claim and no releases
// (settings and plans are validated before anything acts on it).
const ModeTraits& TraitsOf(Mode mode);

}  // namespace privacy
}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PRIVACY_MODE_TRAITS_H_
