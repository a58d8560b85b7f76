// `vfsynth privacy epsilon|calibrate|plan|statement`: the accountant, calibrator and a
// run's plan from the command line (docs/accounting.md). Output is one `key=value` line
// on stdout.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/cli/command_registry.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/config/defaults_table.h"
#include "common/data/csv.h"
#include "common/data/encoder.h"
#include "common/data/numeric_grid.h"
#include "common/data/schema.h"
#include "common/data/split.h"
#include "common/marginals/central_measurement.h"
#include "common/privacy/accountant.h"
#include "common/privacy/calibrator.h"
#include "common/privacy/conversion.h"
#include "common/nn/wae_size.h"
#include "common/privacy/horizontal_feasibility.h"
#include "common/privacy/mode_traits.h"
#include "common/privacy/privacy_plan.h"
#include "common/privacy/rdp.h"
#include "common/privacy/run_accounting.h"

// Defined in split_command.cc.
ABSL_DECLARE_FLAG(std::string, schema);
ABSL_DECLARE_FLAG(std::string, parties);
// Defined in train_local_command.cc.
ABSL_DECLARE_FLAG(int, rounds);

ABSL_FLAG(std::string, noise_multiplier, "",
          "privacy epsilon: noise std / L2 sensitivity per release; a comma list gives one "
          "multiplier per release");
ABSL_FLAG(double, sample_rate, 0.0, "privacy: sampling rate q = B/N, in (0, 1]");
ABSL_FLAG(int64_t, steps, 0, "privacy: number of sampled steps (critic rounds)");
ABSL_FLAG(double, delta, 0.0, "privacy: target delta, in (0, 1)");
ABSL_FLAG(double, epsilon, 0.0, "privacy calibrate, privacy plan, audit: target epsilon");
ABSL_FLAG(int32_t, releases, 1, "privacy: Gaussian releases per step (same multiplier each)");
ABSL_FLAG(std::string, conversion, "improved", "privacy: RDP->DP conversion, improved|classic");
ABSL_FLAG(std::string, sampler, "wor",
          "privacy: wor (fixed-size batch without replacement, replace-one, what vfsynth "
          "does) | poisson (Opacus, add/remove-one)");

ABSL_FLAG(std::string, mode, "",
          "privacy plan: dpsgd|strict|vflgan|gswgan|pate|marginals (horizontal: signds|dpfedavg); "
          "empty: the topology's default mode");
ABSL_FLAG(std::string, topology, "vertical",
          "privacy plan: vertical|horizontal (horizontal: the plan and whether the label can be "
          "expected to survive at --users)");
ABSL_FLAG(int64_t, users, 0, "privacy plan (horizontal): the run's users over all parties U");
ABSL_FLAG(int32_t, users_per_round, 0,
          "privacy plan (horizontal): horizontal.users_per_round n; 0: the mode's default");
ABSL_FLAG(int32_t, participation_cap, 0,
          "privacy plan (horizontal signds): horizontal.participation_cap; 0: the default");
ABSL_FLAG(double, top_k_ratio, 0.0,
          "privacy plan (horizontal signds): horizontal.top_k_ratio alpha; 0: the default");
ABSL_FLAG(int32_t, hidden, 0,
          "privacy plan (horizontal): horizontal.hidden, the autoencoder's width; 0: the default");
ABSL_FLAG(int32_t, latent, 0,
          "privacy plan (horizontal): horizontal.latent; 0: the default");
ABSL_FLAG(int32_t, party_count, 1, "privacy plan / schema draft: number of parties K");
ABSL_FLAG(int64_t, records, 0,
          "privacy plan: aligned records N (marginals: the rows each party holds, which size "
          "its numeric columns' grids)");
ABSL_FLAG(std::string, label, "",
          "privacy plan (marginals): training.label_column, whose pairs with every column are "
          "measured; empty: none");
ABSL_FLAG(int64_t, batch_size, 256, "privacy plan: batch size B");
ABSL_FLAG(int64_t, generator_rounds, 0, "privacy plan: generator rounds");
ABSL_FLAG(int32_t, n_critic, 5, "privacy plan: critic steps per round");
ABSL_FLAG(int32_t, shards, 256, "privacy plan (gswgan/pate): shard critics E per party");
ABSL_FLAG(std::string, vote_aggregation, "threshold", "privacy plan (pate): threshold|gnmax");
ABSL_FLAG(int32_t, projection_dim, 8, "privacy plan (pate gnmax): projected coordinates p");
ABSL_FLAG(double, marginal_noise_multiplier, 0.0,
          "privacy plan: noise multiplier of each party's one-off marginal release "
          "(training.marginal_weight > 0); 0: no release");
ABSL_FLAG(
    double, label_epsilon, 0.0,
    "privacy plan: epsilon of the label release of label pairs, randomized response "
    "(training.label_column; needs --marginal-noise-multiplier, which then also covers the K - 1 "
    "tables); 0: none");
ABSL_FLAG(bool, marginal_release, false,
          "privacy plan: each party releases its marginals once (training.marginal_weight > 0), at "
          "--marginal-noise-multiplier or else the daemons' default share of the budget");
ABSL_FLAG(bool, label_pairs, false,
          "privacy plan: label pairs (training.label_column; dpsgd and strict, with the marginal "
          "release), "
          "at --label-epsilon or else the daemons' default share of the budget");
ABSL_FLAG(
    double, epsilon_budget_against_parties, 0.0,
    "privacy plan: fail if the run's epsilon against other parties (no amplification by sampling) "
    "exceeds it, or if the mode gives no guarantee against them; 0: report only");
ABSL_FLAG(double, shared_critic_budget_share, 0.0,
          "privacy plan (dpsgd): the share of each step's privacy that the curator's D_s gets, "
          "in (0, 1); 0: the daemons' default");

namespace vfsynth {
namespace {

using privacy::Conversion;
using privacy::Sampler;

struct CommonFlags {
  double sample_rate;
  int64_t steps;
  double delta;
  int releases;
  Conversion conversion;
  Sampler sampler;
};

absl::StatusOr<CommonFlags> ReadCommonFlags() {
  CommonFlags flags;
  flags.sample_rate = absl::GetFlag(FLAGS_sample_rate);
  flags.steps = absl::GetFlag(FLAGS_steps);
  flags.delta = absl::GetFlag(FLAGS_delta);
  flags.releases = absl::GetFlag(FLAGS_releases);
  if (!(flags.sample_rate > 0.0 && flags.sample_rate <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sample-rate must be in (0, 1], got ", flags.sample_rate));
  }
  if (flags.steps < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--steps must be >= 1, got ", flags.steps));
  }
  if (!(flags.delta > 0.0 && flags.delta < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("--delta must be in (0, 1), got ", flags.delta));
  }
  if (flags.releases < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--releases must be >= 1, got ", flags.releases));
  }
  ASSIGN_OR_RETURN(flags.conversion, privacy::ParseConversion(absl::GetFlag(FLAGS_conversion)));
  ASSIGN_OR_RETURN(flags.sampler, privacy::ParseSampler(absl::GetFlag(FLAGS_sampler)));
  return flags;
}

// "Z" (repeated --releases times) or "Z1,Z2,..." (one per release).
absl::StatusOr<std::vector<double>> ReadNoiseMultipliers(int releases) {
  const std::string text = absl::GetFlag(FLAGS_noise_multiplier);
  if (text.empty()) return absl::InvalidArgumentError("--noise-multiplier is required");
  std::vector<double> values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    double z = 0.0;
    if (!absl::SimpleAtod(part, &z) || !(z > 0.0) || !std::isfinite(z)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--noise-multiplier must be positive numbers, got '", part, "'"));
    }
    values.push_back(z);
  }
  if (values.size() == 1) return std::vector<double>(releases, values[0]);
  if (releases != 1 && static_cast<int>(values.size()) != releases) {
    return absl::InvalidArgumentError(absl::StrCat("--noise-multiplier lists ", values.size(),
                                                   " values but --releases is ", releases));
  }
  return values;
}

absl::Status RunEpsilon(const CommonFlags& flags) {
  ASSIGN_OR_RETURN(const std::vector<double> z, ReadNoiseMultipliers(flags.releases));
  const privacy::StepMechanism mechanism{z, flags.sample_rate, flags.sampler};
  ASSIGN_OR_RETURN(const privacy::EpsilonAndOrder result,
                   privacy::ComputeEpsilon(mechanism, flags.steps, flags.delta, flags.conversion));
  std::printf("epsilon=%.6f order=%g\n", result.epsilon, result.order);
  if (result.order_at_boundary) {
    std::fprintf(stderr, "note: the best order %g is at the edge of the order grid\n",
                 result.order);
  }
  return absl::OkStatus();
}

absl::Status RunCalibrate(const CommonFlags& flags) {
  const double epsilon = absl::GetFlag(FLAGS_epsilon);
  if (!(epsilon > 0.0) || !std::isfinite(epsilon)) {
    return absl::InvalidArgumentError(absl::StrCat("--epsilon must be > 0, got ", epsilon));
  }
  const privacy::CalibrationTarget target{epsilon,      flags.delta,    flags.sample_rate,
                                          flags.steps,  flags.releases, flags.conversion,
                                          flags.sampler};
  ASSIGN_OR_RETURN(const double z, privacy::CalibrateNoiseMultiplier(target));
  const privacy::StepMechanism mechanism{std::vector<double>(flags.releases, z), flags.sample_rate,
                                         flags.sampler};
  ASSIGN_OR_RETURN(const privacy::EpsilonAndOrder achieved,
                   privacy::ComputeEpsilon(mechanism, flags.steps, flags.delta, flags.conversion));
  std::printf("noise_multiplier=%.6f epsilon=%.6f order=%g\n", z, achieved.epsilon, achieved.order);
  return absl::OkStatus();
}

// `plan`'s ε against `observer`, or "not_DP" where it gives that observer no guarantee.
std::string ObserverEpsilon(const v1::PrivacyPlan& plan, Observer observer) {
  const v1::ObserverGuarantee& g = Guarantee(plan, observer);
  return g.has_epsilon_planned() ? absl::StrFormat("%.6f", g.epsilon_planned())
                                 : std::string("not_DP");
}

// " <observer>_epsilon=E" for every observer.
std::string ObserverEpsilons(const v1::PrivacyPlan& plan) {
  std::string out;
  for (Observer observer : kObservers)
    absl::StrAppend(&out, " ", ObserverName(observer),
                    "_epsilon=", ObserverEpsilon(plan, observer));
  return out;
}

// The plan's guarantees, one "against ..." line per observer on stderr.
void PrintGuarantees(const v1::PrivacyPlan& plan, double delta) {
  for (const v1::ObserverGuarantee& guarantee : plan.guarantees()) {
    std::fprintf(stderr, "against %s\n", DescribeGuarantee(guarantee, delta).c_str());
  }
}

// The columns a measured-marginals run plans from, as the curator lists them: every
// party's one-hot columns of `schema` cut by `parties` (as `vfsynth split` cuts them),
// each numeric grid resolved for a party of `records` rows.
absl::StatusOr<std::vector<v1::PlannedColumn>> PlannedColumnsOf(
    const v1::Schema& schema, const v1::PartiesFile& parties, int64_t records,
    const std::string& label, const v1::MeasurementConfig& settings) {
  CsvTable header_only;
  for (const v1::Column& column : schema.columns()) header_only.header.push_back(column.name());
  ASSIGN_OR_RETURN(const SplitResult split, SplitTable(header_only, schema, parties));
  for (const std::string& column : split.unassigned_columns) {
    std::fprintf(stderr, "note: no party holds column '%s'; it is not measured\n", column.c_str());
  }
  std::vector<TableEncoder> encoders;
  for (const PartyTable& party : split.parties) {
    v1::Schema party_schema = party.schema;
    ResolveNumericGrids(records, &party_schema);
    ASSIGN_OR_RETURN(TableEncoder encoder, TableEncoder::Create(party_schema));
    encoders.push_back(std::move(encoder));
  }
  std::vector<const TableEncoder*> views;
  for (const TableEncoder& encoder : encoders) views.push_back(&encoder);
  marginals::MeasuredLayout layout = marginals::LayoutOf(views, label, settings);
  if (!label.empty() && std::none_of(layout.columns.begin(), layout.columns.end(),
                                     [](const v1::PlannedColumn& c) { return c.label(); })) {
    return absl::InvalidArgumentError(
        absl::StrCat("--label '", label, "' is not a column any party holds"));
  }
  return std::move(layout.columns);
}

// A measured-marginals run's plan (ResolveMarginalsPlan) from the columns the parties
// hold: the ε per observer (all the run's), the histograms it measures and their noise.
absl::Status RunMarginalsPlan(double delta, v1::ExperimentalPrivacyConfig::Conversion conversion) {
  const std::string schema_path = absl::GetFlag(FLAGS_schema);
  const std::string parties_path = absl::GetFlag(FLAGS_parties);
  const int64_t records = absl::GetFlag(FLAGS_records);
  const double epsilon = absl::GetFlag(FLAGS_epsilon);
  if (schema_path.empty() || parties_path.empty() || records < 1) {
    return absl::InvalidArgumentError(
        "--mode marginals plans from the parties' columns: it needs --schema S.json (the joint "
        "schema), --parties P.json (which party holds which column) and --records N (the rows "
        "each party holds)");
  }
  if (!(epsilon > 0.0) || !std::isfinite(epsilon) ||
      !absl::GetFlag(FLAGS_noise_multiplier).empty()) {
    return absl::InvalidArgumentError(
        "--mode marginals needs --epsilon E > 0 and no --noise-multiplier: each histogram's "
        "noise is calibrated to the budget");
  }
  ASSIGN_OR_RETURN(const v1::Schema schema, LoadSchema(schema_path));
  v1::PartiesFile parties;
  RETURN_IF_ERROR(LoadJsonFile(parties_path, &parties));
  v1::PrivacyConfig settings;
  settings.set_mode(v1::PrivacyConfig::marginals);
  settings.set_epsilon(epsilon);
  settings.set_delta(delta);
  settings.mutable_experimental()->set_conversion(conversion);
  RETURN_IF_ERROR(ResolvePrivacyConfig(&settings));
  v1::TrainingConfig training;
  training.set_label_column(absl::GetFlag(FLAGS_label));
  ASSIGN_OR_RETURN(
      std::vector<v1::PlannedColumn> columns,
      PlannedColumnsOf(schema, parties, records, training.label_column(), settings.measurement()));
  ASSIGN_OR_RETURN(const v1::PrivacyPlan plan,
                   ResolveMarginalsPlan(settings, training, std::move(columns),
                                        parties.parties_size(), records));
  int one_way = 0, within = 0, across = 0, label_pairs = 0;
  double sigma_one_way = 0, sigma_pair = 0, sigma_label_pair = 0;
  for (const v1::MeasuredHistogram& m : plan.measurements()) {
    if (m.columns_size() == 1) {
      ++one_way;
      sigma_one_way = m.sigma();
    } else if (plan.columns(m.columns(0)).label() || plan.columns(m.columns(1)).label()) {
      ++label_pairs;
      sigma_label_pair = m.sigma();
    } else {
      ++(m.cross_party() ? across : within);
      sigma_pair = m.sigma();
    }
  }
  std::string line = absl::StrFormat(
      "epsilon=%s%s histograms=%d one_way=%d pairs_within_parties=%d pairs_across_parties=%d "
      "label_pairs=%d sigma_one_way=%.6f",
      ObserverEpsilon(plan, Observer::kPublished), ObserverEpsilons(plan), plan.measurements_size(),
      one_way, within, across, label_pairs, sigma_one_way);
  if (within + across > 0) absl::StrAppendFormat(&line, " sigma_pair=%.6f", sigma_pair);
  if (label_pairs > 0) absl::StrAppendFormat(&line, " sigma_label_pair=%.6f", sigma_label_pair);
  std::printf("%s\n", line.c_str());
  PrintGuarantees(plan, delta);
  return CheckPlanBudgets(plan);
}

// The encoded width D of a horizontal run's rows: every party encodes the one schema
// with its numeric grids from the declared bounds alone (no record count), as here.
absl::StatusOr<int64_t> HorizontalInputWidth(const std::string& schema_path) {
  ASSIGN_OR_RETURN(v1::Schema schema, LoadSchema(schema_path));
  ResolveNumericGrids(/*records=*/0, &schema);
  ASSIGN_OR_RETURN(const TableEncoder encoder, TableEncoder::Create(schema));
  return encoder.width();
}

// The horizontal settings the flags give, each left to the defaults table where unset.
absl::StatusOr<v1::HorizontalConfig> HorizontalSettingsFromFlags(v1::PrivacyConfig::Mode mode) {
  v1::HorizontalConfig horizontal;
  if (const int32_t n = absl::GetFlag(FLAGS_users_per_round); n != 0)
    horizontal.set_users_per_round(n);
  if (const int32_t cap = absl::GetFlag(FLAGS_participation_cap); cap != 0)
    horizontal.set_participation_cap(cap);
  if (const double alpha = absl::GetFlag(FLAGS_top_k_ratio); alpha != 0)
    horizontal.set_top_k_ratio(alpha);
  if (const int32_t hidden = absl::GetFlag(FLAGS_hidden); hidden != 0) horizontal.set_hidden(hidden);
  if (const int32_t latent = absl::GetFlag(FLAGS_latent); latent != 0) horizontal.set_latent(latent);
  RETURN_IF_ERROR(ResolveHorizontalConfig(&horizontal, mode));
  return horizontal;
}

// The mode a config without privacy.mode runs in `topology`, announced with the table's
// reason for it.
absl::StatusOr<std::string> DefaultModeName(v1::Topology topology) {
  const DefaultRow* row = DefaultFor("privacy.mode", DefaultsContext{topology});
  if (row == nullptr) return absl::InternalError("privacy.mode has no default");
  std::printf("mode %s (the default: %s)\n", row->value.c_str(), row->doc.c_str());
  std::fflush(stdout);  // ahead of the guarantees, which go to stderr
  return row->value;
}

// A horizontal run's plan (ResolveHorizontalPlan) for --users users over --party-count
// parties, and whether its label can be expected to survive (EstimateHorizontalFeasibility),
// the model's size from the schema's encoded width.
absl::Status RunHorizontalPlan() {
  const std::string schema_path = absl::GetFlag(FLAGS_schema);
  const int64_t users = absl::GetFlag(FLAGS_users);
  const int parties = absl::GetFlag(FLAGS_party_count);
  const double epsilon = absl::GetFlag(FLAGS_epsilon);
  if (schema_path.empty()) {
    return absl::InvalidArgumentError(
        "--topology horizontal needs --schema S.json, the parties' one schema (the model's size "
        "follows from its encoded width)");
  }
  if (users < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--users must be >= 1 (the run's users over all parties), got ", users));
  }
  if (parties < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--party-count must be >= 1, got ", parties));
  }
  if (!(epsilon > 0.0) || !std::isfinite(epsilon)) {
    return absl::InvalidArgumentError(absl::StrCat("--epsilon must be > 0, got ", epsilon));
  }
  std::string mode_name = absl::GetFlag(FLAGS_mode);
  if (mode_name.empty()) {
    ASSIGN_OR_RETURN(mode_name, DefaultModeName(v1::horizontal));
  }
  privacy::Mode mode = v1::PrivacyConfig::MODE_UNSPECIFIED;
  if (!v1::PrivacyConfig::Mode_Parse(mode_name, &mode) || !privacy::IsHorizontalMode(mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--topology horizontal runs --mode signds or dpfedavg, got '", mode_name, "'"));
  }
  v1::PrivacyConfig privacy;
  privacy.set_mode(mode);
  privacy.set_epsilon(epsilon);
  if (const double delta = absl::GetFlag(FLAGS_delta); delta != 0) privacy.set_delta(delta);
  if (!absl::GetFlag(FLAGS_noise_multiplier).empty()) {
    ASSIGN_OR_RETURN(const std::vector<double> values, ReadNoiseMultipliers(1));
    if (values.size() != 1) return absl::InvalidArgumentError("plan takes one --noise-multiplier");
    privacy.set_noise_multiplier(values[0]);
  }
  RETURN_IF_ERROR(ResolveHorizontalPrivacy(&privacy));
  ASSIGN_OR_RETURN(const v1::HorizontalConfig horizontal, HorizontalSettingsFromFlags(mode));
  v1::TrainingConfig training;
  // -1, the flag's default: the plan's own number of rounds.
  if (const int rounds = absl::GetFlag(FLAGS_rounds); rounds != -1) {
    if (rounds < 1) return absl::InvalidArgumentError("--rounds must be >= 1");
    training.set_rounds(rounds);
  }
  ASSIGN_OR_RETURN(const int64_t width, HorizontalInputWidth(schema_path));
  const int64_t parameters =
      WaeParameterCountOf(width, horizontal.hidden(), horizontal.latent());
  ASSIGN_OR_RETURN(const v1::PrivacyPlan plan,
                   ResolveHorizontalPlan(privacy, horizontal, training, parties, users));
  ASSIGN_OR_RETURN(const HorizontalFeasibility feasibility,
                   EstimateHorizontalFeasibility(privacy, horizontal, training, parties, users,
                                                 parameters));
  std::string line = absl::StrFormat("rounds=%d users_per_round=%d parameters=%d", plan.rounds(),
                                     plan.batch_size(), parameters);
  if (mode == v1::PrivacyConfig::dpfedavg)
    absl::StrAppendFormat(&line, " noise_multiplier=%.6f", plan.noise_multiplier());
  absl::StrAppend(&line, " epsilon=", ObserverEpsilon(plan, Observer::kPublished),
                  ObserverEpsilons(plan));
  std::printf("%s\n%s\n", line.c_str(), feasibility.line.c_str());
  std::fflush(stdout);
  PrintGuarantees(plan, privacy.delta());
  return CheckPlanBudgets(plan);
}

// A whole training run as the daemons plan it (privacy_plan.h): calibrates z for
// --epsilon, or takes --noise-multiplier, and prints the ε against every observer.
absl::Status RunPlan() {
  const std::string topology = absl::GetFlag(FLAGS_topology);
  if (topology == "horizontal") return RunHorizontalPlan();
  if (topology != "vertical") {
    return absl::InvalidArgumentError(
        absl::StrCat("--topology must be vertical or horizontal, got '", topology, "'"));
  }
  std::string mode_name = absl::GetFlag(FLAGS_mode);
  if (mode_name.empty()) {
    ASSIGN_OR_RETURN(mode_name, DefaultModeName(v1::vertical));
  }
  ASSIGN_OR_RETURN(const privacy::Mode mode, privacy::ParseMode(mode_name));
  if (!privacy::TraitsOf(mode).draws_noise()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode ", privacy::ModeName(mode), " has nothing to plan"));
  }
  const double delta = absl::GetFlag(FLAGS_delta);
  if (!(delta > 0.0 && delta < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("--delta must be in (0, 1), got ", delta));
  }
  ASSIGN_OR_RETURN(const privacy::Conversion conversion,
                   privacy::ParseConversion(absl::GetFlag(FLAGS_conversion)));
  const v1::ExperimentalPrivacyConfig::Conversion conversion_setting =
      conversion == privacy::Conversion::kClassic ? v1::ExperimentalPrivacyConfig::classic
                                                  : v1::ExperimentalPrivacyConfig::improved;
  if (mode == v1::PrivacyConfig::marginals) return RunMarginalsPlan(delta, conversion_setting);
  privacy::RunShape shape;
  shape.parties = absl::GetFlag(FLAGS_party_count);
  shape.records = absl::GetFlag(FLAGS_records);
  shape.batch_size = absl::GetFlag(FLAGS_batch_size);
  shape.n_critic = absl::GetFlag(FLAGS_n_critic);
  const int64_t rounds = absl::GetFlag(FLAGS_generator_rounds);
  const int shards = absl::GetFlag(FLAGS_shards);
  const std::string aggregation = absl::GetFlag(FLAGS_vote_aggregation);
  const int projection_dim = absl::GetFlag(FLAGS_projection_dim);
  if (shape.parties < 1 || shape.n_critic < 1 || rounds < 1 || shards < 1 || projection_dim < 1) {
    return absl::InvalidArgumentError(
        "--party-count, --n-critic, --generator-rounds, --shards and --projection-dim must be >= "
        "1");
  }
  if (shape.batch_size < 1 || shape.records < shape.batch_size) {
    return absl::InvalidArgumentError("--records must be at least --batch-size >= 1");
  }
  v1::ExperimentalEnsembleConfig::VoteAggregation vote_aggregation;
  if (!v1::ExperimentalEnsembleConfig::VoteAggregation_Parse(aggregation, &vote_aggregation)) {
    return absl::InvalidArgumentError("--vote-aggregation must be threshold or gnmax");
  }
  shape.marginal_noise_multiplier = absl::GetFlag(FLAGS_marginal_noise_multiplier);
  if (!(shape.marginal_noise_multiplier >= 0) || !std::isfinite(shape.marginal_noise_multiplier)) {
    return absl::InvalidArgumentError("--marginal-noise-multiplier must be a finite number >= 0");
  }
  const bool marginal_release =
      absl::GetFlag(FLAGS_marginal_release) || shape.marginal_noise_multiplier > 0;
  shape.label_epsilon = absl::GetFlag(FLAGS_label_epsilon);
  const bool label_pairs = absl::GetFlag(FLAGS_label_pairs) || shape.label_epsilon > 0;
  if (!(shape.label_epsilon >= 0) || !std::isfinite(shape.label_epsilon) ||
      (label_pairs && !marginal_release)) {
    return absl::InvalidArgumentError(
        "--label-epsilon must be a finite number >= 0, and label pairs (--label-epsilon > 0 or "
        "--label-pairs) "
        "need the marginal release (--marginal-release or --marginal-noise-multiplier)");
  }
  const double share = absl::GetFlag(FLAGS_shared_critic_budget_share);
  if (share != 0.0 &&
      (privacy::TraitsOf(mode).curator_releases_per_step == 0 || !(share > 0.0 && share < 1.0))) {
    return absl::InvalidArgumentError(
        "--shared-critic-budget-share must be in (0, 1), and only with --mode dpsgd");
  }
  v1::PrivacyConfig settings;
  settings.set_mode(mode);
  settings.set_delta(delta);
  settings.mutable_experimental()->set_conversion(conversion_setting);
  if (share != 0.0) settings.mutable_experimental()->set_shared_critic_budget_share(share);
  settings.mutable_ensemble()->set_shards(shards);
  settings.mutable_ensemble()->mutable_experimental()->set_vote_aggregation(vote_aggregation);
  settings.mutable_ensemble()->mutable_experimental()->set_projection_dim(projection_dim);
  if (shape.marginal_noise_multiplier > 0)
    settings.set_marginal_noise_multiplier(shape.marginal_noise_multiplier);
  if (shape.label_epsilon > 0) settings.set_label_epsilon(shape.label_epsilon);
  const double against_parties = absl::GetFlag(FLAGS_epsilon_budget_against_parties);
  if (against_parties > 0) settings.set_epsilon_budget_against_parties(against_parties);
  if (!absl::GetFlag(FLAGS_noise_multiplier).empty()) {
    ASSIGN_OR_RETURN(const std::vector<double> values, ReadNoiseMultipliers(1));
    if (values.size() != 1) return absl::InvalidArgumentError("plan takes one --noise-multiplier");
    settings.set_noise_multiplier(values[0]);
  } else {
    const double epsilon = absl::GetFlag(FLAGS_epsilon);
    if (!(epsilon > 0.0) || !std::isfinite(epsilon)) {
      return absl::InvalidArgumentError("plan needs --epsilon > 0 or --noise-multiplier");
    }
    settings.set_epsilon(epsilon);
  }
  RETURN_IF_ERROR(ResolvePrivacyConfig(&settings));
  v1::TrainingConfig training;
  training.set_batch_size(shape.batch_size);
  training.set_rounds(static_cast<int32_t>(rounds));
  training.set_n_critic(shape.n_critic);
  training.set_marginal_weight(marginal_release ? 1.0 : 0.0);
  if (label_pairs) training.set_label_column("label");
  ASSIGN_OR_RETURN(const v1::PrivacyPlan plan,
                   ResolvePrivacyPlan(settings, training, shape.parties, shape.records));
  ASSIGN_OR_RETURN(const std::optional<double> party, OwnReleasesEpsilonAfter(plan, rounds));
  // One key=value line on stdout; "not_DP" where the run gives an observer no guarantee.
  std::string line = absl::StrFormat("noise_multiplier=%.6f epsilon=%s", plan.noise_multiplier(),
                                     ObserverEpsilon(plan, Observer::kPublished));
  if (party.has_value()) absl::StrAppendFormat(&line, " party_epsilon=%.6f", *party);
  absl::StrAppend(&line, ObserverEpsilons(plan));
  if (privacy::TraitsOf(mode).curator_releases_per_step > 0) {
    absl::StrAppendFormat(&line, " party_noise_multiplier=%.6f shared_critic_noise_multiplier=%.6f",
                          plan.party_noise_multiplier(), plan.shared_critic_noise_multiplier());
  }
  std::printf("%s\n", line.c_str());
  PrintGuarantees(plan, delta);
  return CheckPlanBudgets(plan);
}

// A published table's privacy statement (<table>.privacy.json), one line per observer.
absl::Status RunStatement(const std::string& path) {
  v1::PrivacyPlan plan;
  RETURN_IF_ERROR(LoadJsonFile(path, &plan));
  if (plan.guarantees().empty())
    return absl::InvalidArgumentError(absl::StrCat(path, " states no guarantee"));
  std::printf("privacy %s, plan %s\n", privacy::ModeName(plan.privacy().mode()).c_str(),
              PlanDigest(plan).substr(0, 16).c_str());
  for (const v1::ObserverGuarantee& guarantee : plan.guarantees()) {
    std::printf("  against %s\n", DescribeGuarantee(guarantee, plan.privacy().delta()).c_str());
  }
  return absl::OkStatus();
}

absl::Status RunPrivacyCommand(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "plan") return RunPlan();
  if (args.size() == 2 && args[0] == "statement") return RunStatement(args[1]);
  if (args.size() != 1 || (args[0] != "epsilon" && args[0] != "calibrate")) {
    return absl::InvalidArgumentError(
        "usage: vfsynth privacy epsilon|calibrate|plan [flags] | statement FILE");
  }
  ASSIGN_OR_RETURN(const CommonFlags flags, ReadCommonFlags());
  return args[0] == "epsilon" ? RunEpsilon(flags) : RunCalibrate(flags);
}

const CommandRegistration kRegistration(
    "privacy",
    {"privacy epsilon --noise-multiplier Z --sample-rate Q --steps T --delta D [--releases R] "
     "[--conversion improved|classic] [--sampler wor|poisson]\n"
     "  privacy calibrate --epsilon E --delta D --sample-rate Q --steps T [--releases R] "
     "[--conversion ...] [--sampler ...]\n"
     "  privacy plan --mode M --party-count K --records N --batch-size B --generator-rounds R "
     "[--n-critic n] "
     "(--epsilon E | --noise-multiplier Z) --delta D [--shards E] "
     "[--vote-aggregation threshold|gnmax] [--projection-dim p] [--marginal-noise-multiplier z_m] "
     "[--label-epsilon e_l] [--marginal-release] [--label-pairs] "
     "[--shared-critic-budget-share s] [--epsilon-budget-against-parties e] [--conversion ...]\n"
     "  privacy plan [--mode marginals] --schema S.json --parties P.json --records N --epsilon E "
     "--delta D [--label COL] [--conversion ...]   (the parties' columns decide the histograms; "
     "without --mode: the default mode, and why)\n"
     "  privacy plan --topology horizontal [--mode signds|dpfedavg] --schema S.json --users U "
     "--epsilon E [--delta D] [--party-count K] [--users-per-round n] [--participation-cap t] "
     "[--top-k-ratio a] [--rounds R] [--noise-multiplier Z] [--hidden h] [--latent z]   (the "
     "plan, and whether the label can be expected to survive at U users)\n"
     "  privacy statement S.privacy.json   (the guarantee a published table comes with)",
     &RunPrivacyCommand,
     {"schema", "parties", "rounds"}});

}  // namespace
}  // namespace vfsynth
