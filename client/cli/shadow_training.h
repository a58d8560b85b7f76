#ifndef VFSYNTH_CLIENT_CLI_SHADOW_TRAINING_H_
#define VFSYNTH_CLIENT_CLI_SHADOW_TRAINING_H_

// The membership audit's shadow models, trained through the daemons' own code: a curator
// core and one party core and session per party in this process (InProcessCuratorLink
// instead of gRPC), each protocol the one the daemons pick for the mode
// (CuratorProtocolFor, PartyProtocolFor), with the run's privacy block on every daemon,
// so every mechanism of the mode runs as shipped (party noise, DP-SGD, feature noise,
// the marginal release, measured marginals, ledgers, the privacy plan).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/core/vertical_party_core.h"
#include "common/data/csv.h"
#include "common/eval/membership_audit.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

struct ShadowTrainingOptions {
  v1::ModelConfig model;        // see SmallShadowConfig()
  v1::TrainingConfig training;  // seed is set per shadow model
  v1::PrivacyConfig privacy;    // the curator's and every party's; mode "none" unless set
  v1::PartiesFile parties;      // no parties: one party holds every column
  std::string work_dir;         // scratch space for party files, checkpoints and ledgers
  int64_t synthetic_rows = 0;   // 0: as many as training rows
};

// Small networks and short training so that 2M shadow models fit on 2 cores.
ShadowTrainingOptions SmallShadowConfig(int rounds);

// The audit's shadow runs in `privacy`'s mode: SmallShadowConfig with `rounds` (-1: the
// mode's default) and what the mode needs. Mode none runs the marginal release (exact)
// as the DP modes do by default; mode marginals fits G with batches that fit an audit's
// few hundred records and, its rounds being fit steps that cost no budget, more of them.
absl::StatusOr<ShadowTrainingOptions> AuditShadowConfig(const v1::PrivacyConfig& privacy,
                                                        int rounds);

// The audit's privacy block: `mode` with `epsilon` (0: not given) at `delta`.
// INVALID_ARGUMENT for an unknown mode, a DP mode without a positive ε, or an ε with
// mode none.
absl::StatusOr<v1::PrivacyConfig> ShadowPrivacy(const std::string& mode, double epsilon,
                                                double delta);

// The parties' shared secrets of the shadow run with `seed`: a function of the seed, as
// its networks' starts are, so that runs without noise are reproducible. Each run gets
// its own, so shadow runs on the same records draw different batches, as separate
// deployments would.
PartySecrets ShadowRunSecrets(uint64_t seed);

// Splits `training` into one CSV and schema per party of `parties` (none: one party
// "all" with every column) under `dir`; the files as a run config lists them.
absl::StatusOr<std::vector<v1::PartyDataConfig>> WriteShadowPartyFiles(const v1::Schema& schema,
                                                                       v1::PartiesFile parties,
                                                                       const CsvTable& training,
                                                                       const std::string& dir);

struct ShadowRun {
  CsvTable synthetic;
  v1::PrivacyPlan plan;                     // the plan the curator and every party attested
  std::vector<double> party_epsilon_spent;  // per party, from its ledger (0: none kept)
};

// Trains one shadow generator on `training` (a joint table with the schema's columns)
// with `seed` and synthesises its table. The run's scratch directory under
// options.work_dir is removed afterwards. In mode none it is the reference trainer's
// run on the same party files with ShadowRunSecrets(seed) and training.seed = seed.
absl::StatusOr<ShadowRun> TrainShadowModel(const v1::Schema& schema,
                                           const ShadowTrainingOptions& options,
                                           const CsvTable& training, uint64_t seed);

// A SyntheticSampler over TrainShadowModel; `on_run` (optional) sees every run.
SyntheticSampler MakeShadowSampler(const v1::Schema& schema, ShadowTrainingOptions options,
                                   std::function<void(const ShadowRun&)> on_run = nullptr);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CLI_SHADOW_TRAINING_H_
