#include "common/privacy/run_accounting.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/privacy/calibrator.h"

namespace vfsynth::privacy {
namespace {

int ReleasesPerParty(Mode mode) { return mode == Mode::kStrict ? 2 : 1; }

int JointReleases(Mode mode, int parties) {
  switch (mode) {
    case Mode::kDpsgd: return parties + 1;
    case Mode::kStrict: return 2 * parties;
    case Mode::kVflgan: return parties;
    case Mode::kNone: return 0;
  }
  return 0;
}

StepMechanism Mechanism(int releases, double z, const RunShape& shape) {
  StepMechanism mechanism;
  mechanism.noise_multipliers.assign(releases, z);
  mechanism.sample_rate = static_cast<double>(shape.batch_size) / static_cast<double>(shape.records);
  mechanism.sampler = Sampler::kWithoutReplacement;
  return mechanism;
}

}  // namespace

absl::StatusOr<Mode> ParseMode(const std::string& name) {
  if (name == "none") return Mode::kNone;
  if (name == "dpsgd") return Mode::kDpsgd;
  if (name == "strict") return Mode::kStrict;
  if (name == "vflgan") return Mode::kVflgan;
  return absl::InvalidArgumentError(
      absl::StrCat("privacy mode '", name, "' is not one of none, dpsgd, strict, vflgan"));
}

std::string ModeName(Mode mode) {
  switch (mode) {
    case Mode::kNone: return "none";
    case Mode::kDpsgd: return "dpsgd";
    case Mode::kStrict: return "strict";
    case Mode::kVflgan: return "vflgan";
  }
  return "?";
}

StepMechanism PartyMechanism(Mode mode, double z, const RunShape& shape) {
  return Mechanism(ReleasesPerParty(mode), z, shape);
}

StepMechanism JointMechanism(Mode mode, double z, const RunShape& shape) {
  return Mechanism(JointReleases(mode, shape.parties), z, shape);
}

StepMechanism WithoutAmplification(StepMechanism mechanism) {
  mechanism.sample_rate = 1.0;
  return mechanism;
}

absl::StatusOr<double> CalibrateRunNoise(Mode mode, double epsilon, double delta,
                                         Conversion conversion, const RunShape& shape) {
  if (mode == Mode::kNone) return absl::InvalidArgumentError("mode 'none' has no noise to calibrate");
  CalibrationTarget target;
  target.epsilon = epsilon;
  target.delta = delta;
  target.sample_rate = static_cast<double>(shape.batch_size) / static_cast<double>(shape.records);
  target.steps = shape.critic_steps;
  target.releases = JointReleases(mode, shape.parties);
  target.conversion = conversion;
  target.sampler = Sampler::kWithoutReplacement;
  return CalibrateNoiseMultiplier(target);
}

}  // namespace vfsynth::privacy
