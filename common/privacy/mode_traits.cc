#include "common/privacy/mode_traits.h"

namespace vfsynth::privacy {
namespace {

constexpr ModeTraits::View kAmplified{Protection::kAmplified, ""};
constexpr ModeTraits::View kAgainstParties{Protection::kAgainstParties, ""};
constexpr ModeTraits::View kPerUser{Protection::kPerUser, ""};
constexpr ModeTraits::View kMeasured{Protection::kMeasured, ""};

constexpr ModeTraits::View NotDp(const char* why) { return {Protection::kNotDp, why}; }

constexpr char kNone[] = "mode none: no differential privacy";
constexpr char kVflgan[] =
    "vflgan noises only the feature nets' first layers; the rest of every critic sees real "
    "features un-noised";
constexpr char kDpsgdCurator[] = "dpsgd sends real-row features to the curator un-noised";
constexpr char kDpsgdParties[] =
    "dpsgd sends the curator real-row features un-noised and the parties per-record gradients "
    "computed from them";

// clang-format off
// Columns: mode, topology, protection against {published, curator, other party, curator with
// a party}, what a party releases, its ledger, D_s sees only releases, releases per party per
// step, the curator's own per step, may release marginals, may release label pairs.
const ModeTraits kTable[] = {
    {v1::PrivacyConfig::none,     v1::Topology::vertical,   {NotDp(kNone), NotDp(kNone), NotDp(kNone), NotDp(kNone)},
     PartyRelease::kNothing,             Ledger::kNone,        false, 0, 0, false, false},
    {v1::PrivacyConfig::dpsgd,    v1::Topology::vertical,   {kAmplified, NotDp(kDpsgdCurator), NotDp(kDpsgdParties), NotDp(kDpsgdParties)},
     PartyRelease::kCriticGradient,      Ledger::kCriticSteps, false, 1, 1, true,  true},
    {v1::PrivacyConfig::strict,   v1::Topology::vertical,   {kAmplified, kAmplified, kAgainstParties, kAgainstParties},
     PartyRelease::kFeaturesAndGradient, Ledger::kCriticSteps, true,  2, 0, true,  true},
    {v1::PrivacyConfig::vflgan,   v1::Topology::vertical,   {NotDp(kVflgan), NotDp(kVflgan), NotDp(kVflgan), NotDp(kVflgan)},
     PartyRelease::kFirstLayerGradient,  Ledger::kCriticSteps, false, 1, 0, true,  false},
    {v1::PrivacyConfig::gswgan,   v1::Topology::vertical,   {kAmplified, kAmplified, kAgainstParties, kAgainstParties},
     PartyRelease::kShardEnsemble,       Ledger::kCriticSteps, true,  1, 0, true,  false},
    {v1::PrivacyConfig::pate,     v1::Topology::vertical,   {kAmplified, kAmplified, kAgainstParties, kAgainstParties},
     PartyRelease::kShardEnsemble,       Ledger::kCriticSteps, true,  1, 0, true,  false},
    {v1::PrivacyConfig::signds,   v1::Topology::horizontal, {kPerUser, kPerUser, kPerUser, kPerUser},
     PartyRelease::kUserReports,         Ledger::kUserAnswers, false, 0, 0, false, false},
    {v1::PrivacyConfig::dpfedavg, v1::Topology::horizontal, {kPerUser, kPerUser, kPerUser, kPerUser},
     PartyRelease::kNoisedUpdateSum,     Ledger::kRounds,      false, 0, 0, false, false},
    {v1::PrivacyConfig::marginals, v1::Topology::vertical,  {kMeasured, kMeasured, kMeasured, kMeasured},
     PartyRelease::kHistograms,          Ledger::kMeasurements, false, 0, 0, false, false},
};
// clang-format on

constexpr char kUnknown[] = "unknown mode";
const ModeTraits kUnknownMode{v1::PrivacyConfig::MODE_UNSPECIFIED,
                              v1::Topology::vertical,
                              {NotDp(kUnknown), NotDp(kUnknown), NotDp(kUnknown), NotDp(kUnknown)},
                              PartyRelease::kNothing,
                              Ledger::kNone,
                              false,
                              0,
                              0,
                              false,
                              false};

}  // namespace

const ModeTraits& TraitsOf(Mode mode) {
  for (const ModeTraits& traits : kTable) {
    if (traits.mode == mode) return traits;
  }
  return kUnknownMode;
}

}  // namespace vfsynth::privacy
