#ifndef VFSYNTH_COMMON_PRIVACY_PRIVACY_PLAN_H_
#define VFSYNTH_COMMON_PRIVACY_PRIVACY_PLAN_H_

// A run's privacy plan: the settings, noise and ε every daemon of the run must share
// (the joint ε composes all parties' releases assuming one set of settings), and the
// guarantee the run gives each observer (docs/privacy.md, "Who is protected").

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/privacy/mode_traits.h"
#include "common/privacy/run_accounting.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth {

std::string ObserverName(Observer observer);  // "published", "curator", ...

// The marginal release's noise multiplier for a run of `parties` parties:
// privacy.marginal_noise_multiplier if set, else the one that gives the K releases
// privacy.marginal_budget_share of the budget's zCDP ρ, else (no epsilon) 30.
// 0 when training.marginal_weight is 0: no release.
double MarginalNoiseMultiplier(const v1::PrivacyConfig& privacy, const v1::TrainingConfig& training,
                               int parties);
// With training.label_column (dpsgd or strict, marginal release on): the ε of the label
// release (randomized response), privacy.label_epsilon if set, else the one whose RDP at
// α* = 1 + √(ln(1/δ)/ρ), the order where the budget's zCDP ρ converts to its ε, is
// privacy.experimental.label_budget_share of α*·ρ; else (no epsilon) kLabelEpsilonWithoutBudget.
// 0 without label pairs. The run's calibration composes the release's exact RDP curve,
// so the share only divides the budget.
inline constexpr double kLabelEpsilonWithoutBudget = 0.05;
double LabelEpsilon(const v1::PrivacyConfig& privacy, const v1::TrainingConfig& training);

// The plan for `parties` parties and `records` aligned records from resolved privacy
// and training settings: z given or calibrated to privacy.epsilon, the releases'
// multipliers, and each observer's planned ε.
absl::StatusOr<v1::PrivacyPlan> ResolvePrivacyPlan(const v1::PrivacyConfig& privacy,
                                                   const v1::TrainingConfig& training, int parties,
                                                   int64_t records);

// The measured-marginals mode's plan (privacy.mode marginals) for `records` aligned records
// over `columns`, every party's one-hot columns in party order (PlannedColumn: public
// sizes; `cells` already refined by privacy.measurement.position_bins): the histograms
// PlanMeasurements chooses, their noise calibrated so that all of them together spend
// privacy.epsilon at privacy.delta (zCDP, composed exactly through the RDP accountant), and
// that ε against every observer. A party checks the curator's plan by resolving its own
// from the plan's `columns` after checking its own columns there (CheckPlannedColumns).
bool IsMeasuredMode(privacy::Mode mode);  // marginals
absl::StatusOr<v1::PrivacyPlan> ResolveMarginalsPlan(const v1::PrivacyConfig& privacy,
                                                     const v1::TrainingConfig& training,
                                                     std::vector<v1::PlannedColumn> columns,
                                                     int parties, int64_t records);

// The horizontal topology's plan for `parties` parties holding `users` users; records is
// the users, batch_size the users asked per round. signds: rounds training.rounds or,
// unset, as many as the users' caps allow (users · participation_cap / users_per_round;
// more is refused), and against every observer ε = privacy.epsilon: a user answers at
// most participation_cap rounds at EpsilonPerAnswer each. dpfedavg: rounds
// training.rounds or, unset, users / users_per_round (each user drawn once on average),
// the noise multiplier given or calibrated so that the rounds spend privacy.epsilon at
// privacy.delta, the same (ε, δ) against every observer (DpFedAvgMechanism).
absl::StatusOr<v1::PrivacyPlan> ResolveHorizontalPlan(const v1::PrivacyConfig& privacy,
                                                      const v1::HorizontalConfig& horizontal,
                                                      const v1::TrainingConfig& training,
                                                      int parties, int64_t users);
// ε_r of one SignDS answer of a horizontal plan: privacy.epsilon / participation_cap.
double EpsilonPerAnswer(const v1::PrivacyPlan& plan);
// What one round of a dpfedavg plan releases about a user: its party's sum noised at the
// plan's noise multiplier, the user in it with probability users_per_round / users
// (Poisson sampling; replace-one adjacency, as the run publishes its user counts:
// sensitivity 2 · clip_norm, the noise std the multiplier times that).
privacy::StepMechanism DpFedAvgMechanism(const v1::PrivacyPlan& plan);

// The accountant's shape of a plan's run.
privacy::RunShape PlanShape(const v1::PrivacyPlan& plan);

// FAILED_PRECONDITION if the plan exceeds privacy.epsilon (joint, with an explicit
// noise multiplier) or privacy.epsilon_budget_against_parties, or if that budget is set
// in a mode that gives no guarantee against other parties.
absl::Status CheckPlanBudgets(const v1::PrivacyPlan& plan);

// SHA-256 (hex) of the plan's deterministic serialisation.
std::string PlanDigest(const v1::PrivacyPlan& plan);

// OK if `theirs` equals `ours`; else FAILED_PRECONDITION naming the first setting that
// differs and both values, e.g. "party 'bank' plans privacy.epsilon = 5 but the curator
// plans 10".
absl::Status CheckSamePlan(const v1::PrivacyPlan& ours, absl::string_view our_name,
                           const v1::PrivacyPlan& theirs, absl::string_view their_name);

// The plan's guarantee against `observer`.
const v1::ObserverGuarantee& Guarantee(const v1::PrivacyPlan& plan, Observer observer);

// The published ε of the one-off releases alone (marginals, labels) and of the critic
// releases alone. They compose to the planned ε; it is not their sum.
struct EpsilonBreakdown {
  double one_off = 0;
  double critic = 0;
};
// nullopt where the run makes no DP claim on the published output.
absl::StatusOr<std::optional<EpsilonBreakdown>> PublishedEpsilonBreakdown(
    const v1::PrivacyPlan& plan);
// The breakdown as a log line for a run with one-off releases; "" otherwise.
std::string DescribeEpsilonBreakdown(const v1::PrivacyPlan& plan);

// ε against `observer` of the first `rounds` rounds; nullopt where the run makes no
// DP claim against it.
absl::StatusOr<std::optional<double>> EpsilonAfter(const v1::PrivacyPlan& plan, Observer observer,
                                                   int64_t rounds);

// A published table's privacy statement: its path with the extension replaced by
// ".privacy.json" (synthetic.csv -> synthetic.privacy.json).
std::string PrivacyStatementPath(const std::string& table_path);
// Writes `plan` (JSON) atomically to PrivacyStatementPath(table_path).
absl::Status WritePrivacyStatement(const std::string& table_path, const v1::PrivacyPlan& plan);

// ε of one party's own releases in the first `rounds` rounds (every party's are
// alike); nullopt where the run makes no DP claim.
absl::StatusOr<std::optional<double>> OwnReleasesEpsilonAfter(const v1::PrivacyPlan& plan,
                                                              int64_t rounds);

// One line per observer: "published: ε = 9.98 (δ = 1e-05)" or "other_party: not DP (…)".
std::string DescribeGuarantee(const v1::ObserverGuarantee& guarantee, double delta);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PRIVACY_PRIVACY_PLAN_H_
