#ifndef VFSYNTH_COMMON_PRIVACY_RUN_ACCOUNTING_H_
#define VFSYNTH_COMMON_PRIVACY_RUN_ACCOUNTING_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/privacy/accountant.h"
#include "common/privacy/conversion.h"

namespace vfsynth::privacy {

// Privacy modes of a training run (DESIGN §4).
enum class Mode { kNone, kDpsgd, kStrict, kVflgan };
absl::StatusOr<Mode> ParseMode(const std::string& name);
std::string ModeName(Mode mode);

// What one critic step looks like to the accountant. Batches are uniform fixed-size
// samples without replacement, q = batch_size / records.
struct RunShape {
  int parties = 1;
  int64_t records = 0;
  int64_t batch_size = 0;
  int64_t critic_steps = 0;  // rounds * n_critic
};

// Gaussian releases one party makes per critic step, each with noise multiplier z:
//   dpsgd: its critic gradient; strict: its real-feature rows and its critic gradient;
//   vflgan: its first-layer weight gradient (the paper's claim; see docs/privacy.md).
StepMechanism PartyMechanism(Mode mode, double z, const RunShape& shape);
// Every release of the step across the run, assuming each party uses the same z:
//   dpsgd: K party gradients + the curator's D_s gradient; strict: 2K; vflgan: K.
StepMechanism JointMechanism(Mode mode, double z, const RunShape& shape);
// The same per-step releases as seen by another party, who knows the sampled
// indices (no amplification: q = 1).
StepMechanism WithoutAmplification(StepMechanism mechanism);

// The noise multiplier for which the whole run's joint epsilon equals `epsilon`.
absl::StatusOr<double> CalibrateRunNoise(Mode mode, double epsilon, double delta,
                                         Conversion conversion, const RunShape& shape);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_RUN_ACCOUNTING_H_
