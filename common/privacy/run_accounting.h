#ifndef VFSYNTH_COMMON_PRIVACY_RUN_ACCOUNTING_H_
#define VFSYNTH_COMMON_PRIVACY_RUN_ACCOUNTING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/privacy/accountant.h"
#include "common/privacy/conversion.h"
#include "common/privacy/ensemble_accounting.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth::privacy {

// Privacy modes of a training run (docs/privacy.md), the settings' enum.
using Mode = v1::PrivacyConfig::Mode;
// The mode spelled `name` as in JSON settings and flags; an error names the valid ones.
absl::StatusOr<Mode> ParseMode(const std::string& name);
const std::string& ModeName(Mode mode);
// An error unless `mode` is one of the six of the vertical topology (a settings or plan
// file may leave it unset; signds and dpfedavg are the horizontal topology's).
absl::Status ValidateMode(Mode mode);
// signds and dpfedavg: the horizontal topology's modes.
bool IsHorizontalMode(Mode mode);
// gswgan and pate: shard-critic ensembles (ensemble_accounting.h).
bool IsEnsembleMode(Mode mode);
// strict, gswgan, pate: the curator's shared critic sees only features the parties
// released with noise, so whatever it computes (its loss included) is post-processing.
// In none, dpsgd and vflgan it sees clean real features.
bool SharedCriticSeesOnlyReleases(Mode mode);

// What one critic step looks like to the accountant. Batches are uniform fixed-size
// samples without replacement, q = batch_size / records.
struct RunShape {
  int parties = 1;
  int64_t records = 0;
  int64_t batch_size = 0;
  int64_t critic_steps = 0;  // rounds * n_critic
  int n_critic = 1;
  EnsembleShape ensemble;  // gswgan / pate only
  // > 0: before training, each party releases its one-hot block marginals once with this
  // noise multiplier (no subsampling; common/gan/marginal_target.h). 0: no release.
  double marginal_noise_multiplier = 0;
  // > 0 (with a marginal release): label pairs. The label's holder releases every
  // record's label by randomized response with this ε, and each other party its
  // label-pair tables with marginal_noise_multiplier, as part of the marginal release
  // (same key).
  double label_epsilon = 0;
  // dpsgd: the share of each critic step's privacy (the sum of 1/z² over its K + 1
  // releases) that goes to the curator's D_s release; the K party releases split the
  // rest evenly. 0: an even split, 1/(K + 1) each. The step's composed Gaussian, and so
  // the run's joint epsilon, is the same for every share.
  double shared_critic_share = 0;
};

// The noise multipliers of a dpsgd step's releases for the run's noise multiplier z:
// the K party releases and the curator's D_s release compose to the same Gaussian as
// K + 1 releases at z each, split by shape.shared_critic_share. Other modes: z for both.
struct ReleaseNoise {
  double party = 0;
  double shared_critic = 0;
};
ReleaseNoise SplitReleaseNoise(Mode mode, double z, const RunShape& shape);
// For log lines: "" without a split, else the two multipliers and the share.
std::string DescribeReleaseNoise(Mode mode, double z, const RunShape& shape);

// Gaussian releases one party makes per critic step, each with noise multiplier z
// (dpsgd: SplitReleaseNoise's party multiplier):
//   dpsgd: its critic gradient; strict: its real-feature rows and its critic gradient;
//   vflgan: its first-layer weight gradient (the paper's claim; see docs/privacy.md).
StepMechanism PartyMechanism(Mode mode, double z, const RunShape& shape);
// Every release of the step across the run, assuming each party uses the same z:
//   dpsgd: K party gradients + the curator's D_s gradient (split by SplitReleaseNoise);
//   strict: 2K; vflgan: K.
StepMechanism JointMechanism(Mode mode, double z, const RunShape& shape);
// The same per-step releases as seen by another party, who knows the sampled
// indices (no amplification: q = 1).
StepMechanism WithoutAmplification(StepMechanism mechanism);

// The ensemble shape of `mode` (gswgan: per-row shard draws; pate: the
// vote aggregation "threshold" or "gnmax" with `projection_dim` coordinates).
EnsembleShape MakeEnsembleShape(Mode mode, int shards,
                                v1::ExperimentalEnsembleConfig::VoteAggregation vote_aggregation,
                                int projection_dim);

// Whose releases a run's epsilon covers.
enum class View {
  kJoint,           // every party's: the guarantee to a person whose record all parties hold
  kParty,           // this party's own
  kAgainstParties,  // every party's, seen by another party: it knows the shared batches
                    // (no amplification by the batch sample), not a party's shard draws
};
// Every release of the first `rounds` generator rounds (and the marginal release, if
// any), assuming every party uses z.
// Ensemble modes: per critic step, the parties' noisy real-feature rows of the shared
// batch (q = B/N, one sampling event); per generator round, B row releases per party.
std::vector<ChargedSteps> RunReleases(Mode mode, double z, const RunShape& shape, int64_t rounds,
                                      View view);
absl::StatusOr<EpsilonAndOrder> RunEpsilon(Mode mode, double z, const RunShape& shape,
                                           int64_t rounds, View view, double delta,
                                           Conversion conversion);

// A party's ledger charge (joint view). Ledger keys increase through the run: critic
// step s is key s, except in ensemble modes, where round r's critic steps are keys
// r·(n_critic+1)+c and its generator-phase row releases key r·(n_critic+1)+n_critic.
// With a marginal release, that release is key 0 and every other key moves up by one.
struct LedgerCharge {
  int64_t key = 0;
  StepMechanism mechanism;
  int64_t steps = 1;
};
LedgerCharge CriticStepCharge(Mode mode, double z, const RunShape& shape, int64_t step);
// Only ensemble modes release anything computed from real rows in the generator phase.
std::optional<LedgerCharge> GeneratorRoundCharge(Mode mode, double z, const RunShape& shape,
                                                 int64_t round);
// The marginal release, charged before training in every mode but none.
std::optional<LedgerCharge> MarginalReleaseCharge(Mode mode, const RunShape& shape);

// The noise multiplier for which the whole run's joint epsilon equals `epsilon`.
absl::StatusOr<double> CalibrateRunNoise(Mode mode, double epsilon, double delta,
                                         Conversion conversion, const RunShape& shape);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_RUN_ACCOUNTING_H_
