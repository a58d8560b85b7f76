#ifndef VFSYNTH_COMMON_CONFIG_CONFIG_H_
#define VFSYNTH_COMMON_CONFIG_CONFIG_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// Fills every unset field with its default (defaults_table.h, documented in
// docs/configuration.md) and rejects values that cannot work (non-positive sizes,
// rates, unknown names).
absl::Status ResolveModelConfig(v1::ModelConfig* model);
absl::Status ResolveTrainingConfig(v1::TrainingConfig* training);

// Publication settings: output.rows >= 0, synthetic_csv relative to `base_dir`,
// label_column defaulted from `training`, label_temperature's default and range.
absl::Status ResolveOutputConfig(const std::string& base_dir, const v1::TrainingConfig& training,
                                 v1::OutputConfig* output);

// Default output.label_temperature when the table has a label column (docs/decisions/defaults.md).
inline constexpr double kDefaultLabelTemperature = 0.5;

// Loads `vfsynth train-local`'s config: JSON, defaults applied, validated; relative
// data/schema/output paths are taken relative to the config file's directory.
// `overrides` (command-line flags) change the parsed file before it is resolved.
absl::StatusOr<v1::LocalRunConfig> LoadLocalRunConfig(
    const std::string& path,
    const std::function<void(v1::LocalRunConfig*)>& overrides = nullptr);
absl::Status ResolveLocalRunConfig(const std::string& base_dir, v1::LocalRunConfig* config);

// Privacy settings: defaults (mode strict, δ 1e-5, C = C_f = 1, improved conversion),
// validation; epsilon is required unless mode is none.
absl::Status ResolvePrivacyConfig(v1::PrivacyConfig* privacy);

// dpsgd's default privacy.experimental.shared_critic_budget_share, the share measured best
// (docs/decisions/defaults.md; its row in defaults_table.cc, which config_test checks
// against this). The field stays unset (0) in other modes: no split.
inline constexpr double kDefaultSharedCriticBudgetShare = 0.55;
// model.experimental.conditioned_column defaults to training.label_column ("": no conditioned
// head).
void ResolveConditionedColumn(const v1::TrainingConfig& training, v1::ModelConfig* model);
// What a party's marginal release covers (MarginalTarget).
struct MarginalOptions {
  // Parts each declared bin with a within-bin position is split into (1: the bins only).
  int position_bins = 1;
  // Within-party pairs of one-hot blocks whose joint table has at most this many cells
  // get a 2-way histogram too (0: 1-way histograms only).
  int pair_cells = 0;
};
// training.experimental.marginal_position_bins and training.experimental.marginal_pair_cells.
MarginalOptions MarginalOptionsFor(const v1::TrainingConfig& training);

// The marginal release as dpsgd and strict run it by default (without DP it does not
// help, so the other modes keep their papers' designs): marginal weight 1 and
// within-party pairs, each only where unset, and with `prior` the cross-party
// independence prior at the marginal weight. Nothing with an explicit weight of 0.
absl::Status SetMarginalReleaseDefaults(bool prior, v1::TrainingConfig* training);

// The training defaults in privacy mode `privacy.mode()` and training.preset (those that
// depend on them: rounds, the marginal release, the cross-party prior; and the rest),
// one place for every entry point: the curator with its privacy block, `vfsynth
// train-local` (the reference trainer) as mode none. INVALID_ARGUMENT for a preset the
// mode has no use for.
absl::Status ResolveModeDefaults(const v1::PrivacyConfig& privacy, v1::TrainingConfig* training);

// The horizontal topology (docs/horizontal.md): the autoencoder's and the rounds'
// defaults (DP-FED-WAE's) and validation for privacy mode `mode` (SignDS's top_k_ratio
// and participation_cap apply to signds only); privacy mode signds (its default), epsilon
// per user against everyone, or dpfedavg, (epsilon, delta) per user against everyone,
// with epsilon required and no setting of the vertical modes.
absl::Status ResolveHorizontalConfig(v1::HorizontalConfig* horizontal,
                                     v1::PrivacyConfig::Mode mode);
absl::Status ResolveHorizontalPrivacy(v1::PrivacyConfig* privacy);

// Daemon configs: defaults, validation, paths relative to the config file. Settings of
// the other topology are refused.
absl::Status ResolveCuratorConfig(const std::string& base_dir, v1::CuratorConfig* config);
// `overrides` (command-line flags) change the parsed file before it is resolved, so a
// flag is checked like the setting it replaces.
absl::StatusOr<v1::CuratorConfig> LoadCuratorConfig(
    const std::string& path, const std::function<void(v1::CuratorConfig*)>& overrides = nullptr);
absl::Status ResolvePartyConfig(const std::string& base_dir, v1::PartyConfig* config);
absl::StatusOr<v1::PartyConfig> LoadPartyConfig(
    const std::string& path, const std::function<void(v1::PartyConfig*)>& overrides = nullptr);

// SHA-256 of the resolved settings a checkpoint's state depends on (model, training
// without log_every, privacy without the ledger path): resuming under other settings is
// refused.
std::string SettingsDigest(const v1::ModelConfig& model, const v1::TrainingConfig& training,
                           const v1::PrivacyConfig& privacy);

// `path` if absolute, else base_dir/path.
std::string ResolvePath(const std::string& base_dir, const std::string& path);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_CONFIG_CONFIG_H_
