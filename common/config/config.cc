#include "common/config/config.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/base/address.h"
#include "common/base/party_name.h"
#include "common/base/proto_json.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/config/defaults_table.h"
#include "common/data/schema_limits.h"
#include "common/privacy/mode_traits.h"
#include "common/privacy/rdp.h"
#include "common/privacy/run_accounting.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/message_differencer.h"

namespace vfsynth {
namespace {

absl::Status Positive(const char* name, double value) {
  if (!(value > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be > 0, got ", value));
  }
  return absl::OkStatus();
}

// Counts bounded so that a typo (an extra zero or three) is a clear error here, not a
// run that never ends or a machine that thrashes.
absl::Status InRange(const char* name, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be in [", low, ", ", high, "], got ", value));
  }
  return absl::OkStatus();
}
constexpr int64_t kMaxThreads = 256;
constexpr int64_t kMaxCriticSteps = 100;
constexpr int64_t kMaxOutputRows = 1'000'000'000;

// A conninfo that carries a password would put it in the config and in every error that
// names the connection: `key=value` and `?password=` forms, and a URI's "user:password@".
bool ConninfoHasPassword(const std::string& conninfo) {
  static const std::regex kKeyword(R"((^|[\s?&])password\s*=)", std::regex::icase);
  static const std::regex kUserInfo(R"(^postgres(ql)?://[^/?@]*:[^/?@]*@)", std::regex::icase);
  return std::regex_search(conninfo, kKeyword) || std::regex_search(conninfo, kUserInfo);
}

// `prefix` ("postgres.", "output.postgres.") names the settings in errors.
absl::Status ResolvePostgresConnection(const std::string& base_dir, const std::string& prefix,
                                       const std::string& conninfo, std::string* password_file) {
  if (conninfo.empty())
    return absl::InvalidArgumentError(absl::StrCat(prefix, "conninfo is required"));
  if (ConninfoHasPassword(conninfo)) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "conninfo must not carry a password: put it in ", prefix,
                     "password_file (or libpq's PGPASSWORD, PGPASSFILE, ~/.pgpass)"));
  }
  *password_file = ResolvePath(base_dir, *password_file);
  return absl::OkStatus();
}

absl::Status FiniteNonNegative(const char* name, double value) {
  if (!(value >= 0 && std::isfinite(value))) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a finite number >= 0"));
  }
  return absl::OkStatus();
}

// An enum setting: one of its enum's values (a JSON name is checked when parsed; a
// number set by code or read from a binary file is checked here).
absl::Status KnownValue(const char* name, const google::protobuf::EnumDescriptor* values,
                        int value) {
  if (values->FindValueByNumber(value) != nullptr) return absl::OkStatus();
  std::string names;
  for (int i = 0; i < values->value_count(); ++i)
    absl::StrAppend(&names, i > 0 ? ", " : "", values->value(i)->name());
  return absl::InvalidArgumentError(absl::StrCat(name, " must be one of ", names, ", got ", value));
}

// Network widths are bounded so that a typo (an extra zero or five) is a clear error
// here, not a multi-gigabyte allocation failing inside LibTorch.
constexpr int kMaxWidth = 8192;

absl::Status Width(const char* name, int64_t value) {
  if (value < 1 || value > kMaxWidth) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be in [1, ", kMaxWidth, "], got ", value));
  }
  return absl::OkStatus();
}

template <typename Repeated>
absl::Status Widths(const char* name, const Repeated& values) {
  for (auto value : values) RETURN_IF_ERROR(Width(name, value));
  return absl::OkStatus();
}

absl::Status ValidateRegistrationLimits(const v1::RegistrationLimits& limits) {
  const v1::RegistrationLimits ceiling = RegistrationLimitsCeiling();
  RETURN_IF_ERROR(
      InRange("registration_limits.columns", limits.columns(), 1, ceiling.columns()));
  RETURN_IF_ERROR(InRange("registration_limits.categories_per_column",
                          limits.categories_per_column(), 1, ceiling.categories_per_column()));
  return InRange("registration_limits.encoded_width", limits.encoded_width(), 1,
                 ceiling.encoded_width());
}

absl::Status ValidateEnsembleConfig(const v1::EnsembleConfig& e) {
  const v1::ExperimentalEnsembleConfig& experimental = e.experimental();
  RETURN_IF_ERROR(Positive("privacy.ensemble.shards", e.shards()));
  RETURN_IF_ERROR(Width("privacy.ensemble.shard_hidden", e.shard_hidden()));
  RETURN_IF_ERROR(Positive("privacy.ensemble.shard_batch", e.shard_batch()));
  RETURN_IF_ERROR(Positive("privacy.ensemble.vote_top_k", e.vote_top_k()));
  RETURN_IF_ERROR(Positive("privacy.ensemble.vote_clip", e.vote_clip()));
  RETURN_IF_ERROR(
      Positive("privacy.ensemble.experimental.projection_dim", experimental.projection_dim()));
  RETURN_IF_ERROR(Positive("privacy.ensemble.experimental.gnmax_bins", experimental.gnmax_bins()));
  if (!(e.vote_threshold() >= 0 && e.vote_threshold() <= 1)) {
    return absl::InvalidArgumentError("privacy.ensemble.vote_threshold must be in [0, 1]");
  }
  return KnownValue("privacy.ensemble.experimental.vote_aggregation",
                    v1::ExperimentalEnsembleConfig::VoteAggregation_descriptor(),
                    experimental.vote_aggregation());
}

// D_s scores packs of model.experimental.pack consecutive batch rows (PackRows, wgan.h).
absl::Status CheckPack(const v1::ModelConfig& m, const v1::TrainingConfig& t) {
  if (t.batch_size() % m.experimental().pack() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("training.batch_size ", t.batch_size(),
                                                   " is not a multiple of model.experimental.pack ",
                                                   m.experimental().pack()));
  }
  return absl::OkStatus();
}

// A setting that does not apply is an error, not silently ignored: every field set in
// `message` other than `allowed` is refused, named as prefix.field, with `why`.
absl::Status OnlyApplicableSettings(const google::protobuf::Message& message,
                                    const std::string& prefix,
                                    absl::Span<const absl::string_view> allowed,
                                    absl::string_view why) {
  std::vector<const google::protobuf::FieldDescriptor*> set;
  message.GetReflection()->ListFields(message, &set);
  for (const google::protobuf::FieldDescriptor* field : set) {
    if (!absl::c_linear_search(allowed, field->name())) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, field->name(), " does not apply: ", why));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResolveModelConfig(v1::ModelConfig* m) {
  RETURN_IF_ERROR(ApplyDefaults({}, "model", m));
  const v1::ExperimentalModelConfig* const experimental = &m->experimental();
  RETURN_IF_ERROR(Width("model.z_dim", m->z_dim()));
  RETURN_IF_ERROR(Width("model.feature_dim", m->feature_dim()));
  RETURN_IF_ERROR(Widths("model.generator_hidden", m->generator_hidden()));
  RETURN_IF_ERROR(Widths("model.feature_hidden", m->feature_hidden()));
  RETURN_IF_ERROR(Widths("model.shared_hidden", m->shared_hidden()));
  RETURN_IF_ERROR(Positive("model.experimental.gumbel_tau", experimental->gumbel_tau()));
  RETURN_IF_ERROR(Positive("model.experimental.pack", experimental->pack()));
  if (!(experimental->shared_critic_weight() >= 0 && experimental->shared_critic_weight() <= 100)) {
    return absl::InvalidArgumentError(
        "model.experimental.shared_critic_weight must be in [0, 100]");
  }
  if (experimental->leaky_slope() < 0 || experimental->leaky_slope() >= 1) {
    return absl::InvalidArgumentError("model.experimental.leaky_slope must be in [0, 1)");
  }
  RETURN_IF_ERROR(KnownValue("model.experimental.categorical_output",
                             v1::ExperimentalModelConfig::CategoricalOutput_descriptor(),
                             experimental->categorical_output()));
  RETURN_IF_ERROR(KnownValue("model.experimental.generator_norm",
                             v1::ExperimentalModelConfig::GeneratorNorm_descriptor(),
                             experimental->generator_norm()));
  RETURN_IF_ERROR(KnownValue("model.experimental.generator_towers",
                             v1::ExperimentalModelConfig::GeneratorTowers_descriptor(),
                             experimental->generator_towers()));
  if (experimental->generator_private_z() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.experimental.generator_private_z must be >= 0, got ",
                     experimental->generator_private_z()));
  }
  if (experimental->generator_private_z() > 0 &&
      experimental->generator_towers() != v1::ExperimentalModelConfig::per_party) {
    return absl::InvalidArgumentError(
        "model.experimental.generator_private_z needs model.experimental.generator_towers "
        "'per_party' (a joint "
        "generator has no tower of a party's own to give it to)");
  }
  return absl::OkStatus();
}

absl::Status ResolveTrainingConfig(v1::TrainingConfig* t) {
  // Without a mode only the rows that hold in every mode apply (ResolveModeDefaults
  // applies the others first).
  RETURN_IF_ERROR(ApplyDefaults({}, "training", t));
  const v1::ExperimentalTrainingConfig* const experimental = &t->experimental();
  RETURN_IF_ERROR(Positive("training.batch_size", t->batch_size()));
  RETURN_IF_ERROR(InRange("training.n_critic", t->n_critic(), 1, kMaxCriticSteps));
  RETURN_IF_ERROR(Positive("training.lr_generator", t->lr_generator()));
  RETURN_IF_ERROR(Positive("training.lr_critic", t->lr_critic()));
  RETURN_IF_ERROR(InRange("training.threads", t->threads(), 1, kMaxThreads));
  RETURN_IF_ERROR(Positive("training.log_every", t->log_every()));
  if (t->rounds() < 0) return absl::InvalidArgumentError("training.rounds must be >= 0");
  if (!(experimental->generator_average_decay() >= 0 &&
        experimental->generator_average_decay() < 1)) {
    return absl::InvalidArgumentError(
        "training.experimental.generator_average_decay must be in [0, 1)");
  }
  if (t->gp_lambda() < 0) return absl::InvalidArgumentError("training.gp_lambda must be >= 0");
  RETURN_IF_ERROR(FiniteNonNegative("training.marginal_weight", t->marginal_weight()));
  RETURN_IF_ERROR(FiniteNonNegative("training.experimental.cross_party_independence_weight",
                                    experimental->cross_party_independence_weight()));
  RETURN_IF_ERROR(FiniteNonNegative("training.experimental.label_pair_weight",
                                    experimental->label_pair_weight()));
  RETURN_IF_ERROR(FiniteNonNegative("training.experimental.marginal_reverse_weight",
                                    experimental->marginal_reverse_weight()));
  if (experimental->marginal_position_bins() < 1 || experimental->marginal_position_bins() > 64) {
    return absl::InvalidArgumentError(
        "training.experimental.marginal_position_bins must be in [1, 64]");
  }
  if (experimental->marginal_pair_cells() < 0 || experimental->marginal_pair_cells() > 4096) {
    return absl::InvalidArgumentError(
        "training.experimental.marginal_pair_cells must be in [0, 4096]");
  }
  if (t->beta1() < 0 || t->beta1() >= 1 || t->beta2() < 0 || t->beta2() >= 1) {
    return absl::InvalidArgumentError("training.beta1 and beta2 must be in [0, 1)");
  }
  return absl::OkStatus();
}

namespace {

// The Gaussian mechanism's settings, as the vertical modes and dpfedavg read them: delta
// in (0, 1), clip_norm and any noise_multiplier finite and > 0.
absl::Status ValidateGaussianSettings(const v1::PrivacyConfig* p) {
  if (!(p->delta() > 0 && p->delta() < 1))
    return absl::InvalidArgumentError("privacy.delta must be in (0, 1)");
  if (!(p->clip_norm() > 0 && std::isfinite(p->clip_norm()))) {
    return absl::InvalidArgumentError("privacy.clip_norm must be finite and > 0");
  }
  if (p->has_noise_multiplier() &&
      !(p->noise_multiplier() > 0 && std::isfinite(p->noise_multiplier()))) {
    return absl::InvalidArgumentError("privacy.noise_multiplier must be finite and > 0");
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// The critics' settings and those of the GAN modes' releases: mode marginals has neither,
// so a config that sets one of them was written for another mode.
constexpr absl::string_view kGanOnlySettings[] = {
    "privacy.clip_norm",
    "privacy.feature_clip_norm",
    "privacy.marginal_noise_multiplier",
    "privacy.marginal_budget_share",
    "privacy.label_epsilon",
    "privacy.ensemble.shards",
    "privacy.ensemble.shard_hidden",
    "privacy.ensemble.shard_batch",
    "privacy.ensemble.vote_top_k",
    "privacy.ensemble.vote_clip",
    "privacy.ensemble.vote_threshold",
    "privacy.ensemble.experimental.vote_aggregation",
    "privacy.ensemble.experimental.projection_dim",
    "privacy.ensemble.experimental.gnmax_bins",
    "privacy.experimental.shared_critic_budget_share",
    "privacy.experimental.label_budget_share",
    "training.n_critic",
    "training.lr_critic",
    "training.gp_lambda",
    "training.marginal_weight",
    "training.experimental.marginal_pair_cells",
    "training.experimental.cross_party_independence_weight",
    "model.feature_hidden",
    "model.feature_dim",
    "model.shared_hidden",
    "model.experimental.leaky_slope",
    "model.experimental.shared_critic_weight",
    "model.experimental.pack",
};

// Whether the setting at `path` (field names within `message`, the settings of
// `section`) holds other than what the defaults give it in `context`: a resolved config
// resolves again. INTERNAL for a path the message does not have (a bug in kGanOnlySettings).
absl::StatusOr<bool> DiffersFromDefault(const DefaultsContext& context, absl::string_view section,
                                        const google::protobuf::Message& message,
                                        absl::string_view path) {
  std::unique_ptr<google::protobuf::Message> defaulted(message.New());
  defaulted->CopyFrom(message);
  google::protobuf::Message* at = defaulted.get();
  const std::vector<absl::string_view> names = absl::StrSplit(path, '.');
  for (size_t i = 0; i < names.size(); ++i) {
    const google::protobuf::FieldDescriptor* field =
        at->GetDescriptor()->FindFieldByName(std::string(names[i]));
    if (field == nullptr) return absl::InternalError(absl::StrCat("no setting ", path));
    const google::protobuf::Reflection* reflection = at->GetReflection();
    const bool set = field->is_repeated() ? reflection->FieldSize(*at, field) > 0
                                          : reflection->HasField(*at, field);
    if (!set) return false;
    if (i + 1 == names.size()) {
      reflection->ClearField(at, field);
    } else {
      at = reflection->MutableMessage(at, field);
    }
  }
  RETURN_IF_ERROR(ApplyDefaults(context, section, defaulted.get(), {path}));
  return !google::protobuf::util::MessageDifferencer::Equals(message, *defaulted);
}

// In mode marginals, refuses the settings of `section` (its message: `message`) that only
// the GAN modes read, set to other than their defaults.
absl::Status RefuseGanOnlySettings(v1::PrivacyConfig::Mode mode, absl::string_view section,
                                   const google::protobuf::Message& message) {
  if (mode != v1::PrivacyConfig::marginals) return absl::OkStatus();
  const DefaultsContext context{v1::vertical, mode};
  for (const absl::string_view path : kGanOnlySettings) {
    if (!absl::StartsWith(path, absl::StrCat(section, "."))) continue;
    ASSIGN_OR_RETURN(const bool differs,
                     DiffersFromDefault(context, section, message, path.substr(section.size() + 1)));
    if (differs) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " does not apply to privacy.mode 'marginals' (the default), which measures "
                "histograms once and fits G to them without critics; set privacy.mode to the GAN "
                "mode this config was written for (docs/configuration.md)"));
    }
  }
  return absl::OkStatus();
}

// The measured-marginals mode calibrates its noise to the budget, so it needs one; its
// histogram choice must be finite and bounded (a plan is built from it before any check
// of its size).
absl::Status ValidateMeasurementConfig(const v1::PrivacyConfig& p) {
  const v1::MeasurementConfig& m = p.measurement();
  if (p.mode() == v1::PrivacyConfig::marginals && !p.has_epsilon()) {
    return absl::InvalidArgumentError(
        "privacy.mode 'marginals' needs privacy.epsilon: its noise is calibrated to the budget");
  }
  if (p.mode() == v1::PrivacyConfig::marginals && p.has_noise_multiplier()) {
    return absl::InvalidArgumentError(
        "privacy.noise_multiplier does not apply to mode 'marginals' (each histogram's noise "
        "follows from privacy.epsilon and privacy.measurement)");
  }
  constexpr int64_t kMaxPairCells = 1 << 20;
  if (m.max_pair_cells() < 0 || m.max_pair_cells() > kMaxPairCells) {
    return absl::InvalidArgumentError(absl::StrCat(
        "privacy.measurement.max_pair_cells must be in [0, ", kMaxPairCells, "], got ",
        m.max_pair_cells()));
  }
  for (const auto& [name, weight] : {std::pair{"pair_weight", m.pair_weight()},
                                     std::pair{"label_pair_weight", m.label_pair_weight()}}) {
    if (!(weight >= 0 && weight <= 1e6)) {
      return absl::InvalidArgumentError(
          absl::StrCat("privacy.measurement.", name, " must be in [0, 1e6], got ", weight));
    }
  }
  if (m.pair_bins() < 1 || m.pair_bins() > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("privacy.measurement.pair_bins must be in [1, 1024], got ", m.pair_bins()));
  }
  if (m.position_bins() < 1 || m.position_bins() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "privacy.measurement.position_bins must be in [1, 64], got ", m.position_bins()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResolvePrivacyConfig(v1::PrivacyConfig* p) {
  DefaultsContext context{v1::vertical};
  RETURN_IF_ERROR(ApplyDefaults(context, "privacy", p, {"mode"}));
  const v1::PrivacyConfig::Mode mode = p->mode();
  if (privacy::IsHorizontalMode(mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("privacy.mode '", privacy::ModeName(mode), "' needs topology 'horizontal'"));
  }
  RETURN_IF_ERROR(privacy::ValidateMode(mode));
  RETURN_IF_ERROR(RefuseGanOnlySettings(mode, "privacy", *p));
  context.mode = mode;
  RETURN_IF_ERROR(ApplyDefaults(context, "privacy", p));
  const v1::ExperimentalPrivacyConfig* const experimental = &p->experimental();
  RETURN_IF_ERROR(ValidateEnsembleConfig(p->ensemble()));
  RETURN_IF_ERROR(KnownValue("privacy.experimental.conversion",
                             v1::ExperimentalPrivacyConfig::Conversion_descriptor(),
                             experimental->conversion()));
  RETURN_IF_ERROR(ValidateMeasurementConfig(*p));
  RETURN_IF_ERROR(ValidateGaussianSettings(p));
  RETURN_IF_ERROR(Positive("privacy.feature_clip_norm", p->feature_clip_norm()));
  if (privacy::TraitsOf(mode).draws_noise() && !p->has_epsilon() && !p->has_noise_multiplier()) {
    return absl::InvalidArgumentError(
        absl::StrCat("privacy.mode '", privacy::ModeName(mode),
                     "' needs privacy.epsilon (the budget) or privacy.noise_multiplier"));
  }
  if (p->has_epsilon()) RETURN_IF_ERROR(Positive("privacy.epsilon", p->epsilon()));
  if (p->has_marginal_noise_multiplier()) {
    RETURN_IF_ERROR(Positive("privacy.marginal_noise_multiplier", p->marginal_noise_multiplier()));
    if (!std::isfinite(p->marginal_noise_multiplier())) {
      return absl::InvalidArgumentError("privacy.marginal_noise_multiplier must be finite");
    }
  }
  if (p->has_marginal_budget_share() &&
      !(p->marginal_budget_share() > 0 && p->marginal_budget_share() < 1)) {
    return absl::InvalidArgumentError("privacy.marginal_budget_share must be in (0, 1)");
  }
  if (p->has_label_epsilon() && !(p->label_epsilon() > 0 && std::isfinite(p->label_epsilon()))) {
    return absl::InvalidArgumentError("privacy.label_epsilon must be finite and > 0");
  }
  if (experimental->has_label_budget_share() &&
      !(experimental->label_budget_share() > 0 && experimental->label_budget_share() < 1)) {
    return absl::InvalidArgumentError("privacy.experimental.label_budget_share must be in (0, 1)");
  }
  if (experimental->has_shared_critic_budget_share()) {
    if (privacy::TraitsOf(mode).curator_releases_per_step == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("privacy.experimental.shared_critic_budget_share applies to mode 'dpsgd' "
                       "only (the curator's D_s), not '",
                       privacy::ModeName(mode), "'"));
    }
    if (!(experimental->shared_critic_budget_share() > 0 &&
          experimental->shared_critic_budget_share() < 1)) {
      return absl::InvalidArgumentError(
          "privacy.experimental.shared_critic_budget_share must be in (0, 1)");
    }
  }
  return absl::OkStatus();
}

MarginalOptions MarginalOptionsFor(const v1::TrainingConfig& training) {
  MarginalOptions options;
  options.position_bins = training.experimental().marginal_position_bins();
  options.pair_cells = training.experimental().marginal_pair_cells();
  return options;
}

void ResolveConditionedColumn(const v1::TrainingConfig& training, v1::ModelConfig* model) {
  if (!model->experimental().has_conditioned_column())
    model->mutable_experimental()->set_conditioned_column(training.label_column());
}

std::string SettingsDigest(const v1::ModelConfig& model, const v1::TrainingConfig& training,
                           const v1::PrivacyConfig& privacy) {
  // threads stay in: a different reduction split changes the last bits of a replay.
  v1::TrainingConfig t = training;
  t.clear_log_every();
  v1::PrivacyConfig p = privacy;
  p.clear_ledger();
  return Sha256Builder()
      .Add(model.SerializeAsString())
      .Add(t.SerializeAsString())
      .Add(p.SerializeAsString())
      .Hex();
}

std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute() || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

absl::Status ResolveOutputConfig(const std::string& base_dir, const v1::TrainingConfig& training,
                                 v1::OutputConfig* output) {
  RETURN_IF_ERROR(InRange("output.rows", output->rows(), 0, kMaxOutputRows));
  output->set_synthetic_csv(ResolvePath(base_dir, output->synthetic_csv()));
  if (output->has_postgres()) {
    v1::PostgresTarget* target = output->mutable_postgres();
    RETURN_IF_ERROR(ResolvePostgresConnection(base_dir, "output.postgres.", target->conninfo(),
                                              target->mutable_password_file()));
    if (target->table().empty())
      return absl::InvalidArgumentError("output.postgres.table is required");
  }
  if (output->label_column().empty()) output->set_label_column(training.label_column());
  if (!output->has_label_temperature()) {
    output->set_label_temperature(output->label_column().empty() ? 1.0 : kDefaultLabelTemperature);
  }
  const double t = output->label_temperature();
  if (!(t > 0 && t <= 10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("output.label_temperature must be in (0, 10], got ", t));
  }
  if (t != 1 && output->label_column().empty()) {
    return absl::InvalidArgumentError(
        "output.label_temperature needs output.label_column (the categorical column it applies "
        "to)");
  }
  return absl::OkStatus();
}

absl::Status ResolveLocalRunConfig(const std::string& base_dir, v1::LocalRunConfig* c) {
  if (c->parties_size() == 0) return absl::InvalidArgumentError("config lists no parties");
  absl::flat_hash_set<std::string> names;
  for (v1::PartyDataConfig& party : *c->mutable_parties()) {
    RETURN_IF_ERROR(AddUniquePartyName(party.name(), "parties: party", &names));
    if (party.data().empty() || party.schema().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("party '", party.name(), "' needs both 'data' and 'schema'"));
    }
    party.set_data(ResolvePath(base_dir, party.data()));
    party.set_schema(ResolvePath(base_dir, party.schema()));
  }
  RETURN_IF_ERROR(ApplyDefaults({}, "local", c));
  if (c->sampling_secret().empty() || c->alignment_key().empty()) {
    return absl::InvalidArgumentError("sampling_secret and alignment_key must not be empty");
  }
  RETURN_IF_ERROR(ResolveOutputConfig(base_dir, c->training(), c->mutable_output()));
  if (c->output().has_postgres()) {
    return absl::InvalidArgumentError(
        "output.postgres is the curator's; vfsynth train-local writes output.synthetic_csv");
  }
  RETURN_IF_ERROR(ResolveModelConfig(c->mutable_model()));
  v1::PrivacyConfig none;  // the reference trainer trains as the daemons do in mode none
  none.set_mode(v1::PrivacyConfig::none);
  RETURN_IF_ERROR(ResolveModeDefaults(none, c->mutable_training()));
  RETURN_IF_ERROR(ResolveTrainingConfig(c->mutable_training()));
  ResolveConditionedColumn(c->training(), c->mutable_model());
  return CheckPack(c->model(), c->training());
}

namespace {

// Loads a JSON config and resolves it relative to its own directory; errors name the file.
template <typename Config>
absl::StatusOr<Config> LoadConfig(const std::string& path,
                                  absl::Status (*resolve)(const std::string&, Config*),
                                  const std::function<void(Config*)>& overrides = nullptr) {
  Config config;
  RETURN_IF_ERROR(LoadJsonFile(path, &config));
  // Command-line overrides are validated with the settings they replace.
  if (overrides) overrides(&config);
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  absl::Status status = resolve(base_dir, &config);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.message()));
  return config;
}

void ResolveTls(const std::string& base_dir, v1::TlsConfig* tls) {
  tls->set_ca(ResolvePath(base_dir, tls->ca()));
  tls->set_cert(ResolvePath(base_dir, tls->cert()));
  tls->set_key(ResolvePath(base_dir, tls->key()));
}

absl::Status CheckTls(bool plaintext, const v1::TlsConfig& tls) {
  if (plaintext) return absl::OkStatus();
  if (tls.ca().empty() || tls.cert().empty() || tls.key().empty()) {
    return absl::InvalidArgumentError(
        "tls.ca, tls.cert and tls.key are required (plaintext is for loopback tests only)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::LocalRunConfig> LoadLocalRunConfig(
    const std::string& path, const std::function<void(v1::LocalRunConfig*)>& overrides) {
  return LoadConfig<v1::LocalRunConfig>(path, &ResolveLocalRunConfig, overrides);
}

absl::Status SetMarginalReleaseDefaults(bool prior, v1::TrainingConfig* training) {
  // dpsgd's rows, whose presets tell the prior's row apart.
  const DefaultsContext context{
      v1::vertical, v1::PrivacyConfig::dpsgd,
      prior ? v1::TrainingConfig::standard : v1::TrainingConfig::large_budget, training};
  return ApplyDefaults(context, "training", training,
                       {"marginal_weight", "experimental.marginal_pair_cells",
                        "experimental.cross_party_independence_weight"});
}

absl::Status ResolveModeDefaults(const v1::PrivacyConfig& privacy, v1::TrainingConfig* t) {
  const v1::PrivacyConfig::Mode mode = privacy.mode();
  DefaultsContext context{v1::vertical, mode};
  RETURN_IF_ERROR(ApplyDefaults(context, "training", t, {"preset"}));
  const bool large_budget = t->preset() == v1::TrainingConfig::large_budget;
  if (large_budget && (mode != v1::PrivacyConfig::dpsgd || !t->label_column().empty())) {
    return absl::InvalidArgumentError(
        "training.preset 'large_budget' is for privacy.mode dpsgd without training.label_column "
        "(its noised "
        "shared critic conveys the dependence across parties only there; docs/configuration.md, "
        "\"Presets\")");
  }
  // Every training default, the mode's and the preset's included (defaults_table.cc;
  // the evidence for each is in docs/decisions/defaults.md).
  context.preset = t->preset();
  context.training = t;
  return ApplyDefaults(context, "training", t);
}

absl::Status ResolveHorizontalConfig(v1::HorizontalConfig* h, v1::PrivacyConfig::Mode mode) {
  const bool sign_ds = mode == v1::PrivacyConfig::signds;
  if (!sign_ds) {
    RETURN_IF_ERROR(OnlyApplicableSettings(
        *h, "horizontal.",
        {"users_per_round", "local_epochs", "local_learning_rate", "local_batch_size", "gamma",
         "hidden", "latent"},
        "SignDS's; dpfedavg samples every user at rate users_per_round / users, with no cap"));
  }
  // Every mode but signds resolves as dpfedavg, as the validation below reads it.
  RETURN_IF_ERROR(ApplyDefaults(
      {v1::horizontal, sign_ds ? v1::PrivacyConfig::signds : v1::PrivacyConfig::dpfedavg},
      "horizontal", h));
  RETURN_IF_ERROR(Positive("horizontal.users_per_round", h->users_per_round()));
  RETURN_IF_ERROR(Positive("horizontal.local_epochs", h->local_epochs()));
  RETURN_IF_ERROR(Positive("horizontal.local_learning_rate", h->local_learning_rate()));
  if (sign_ds) RETURN_IF_ERROR(Positive("horizontal.participation_cap", h->participation_cap()));
  RETURN_IF_ERROR(Positive("horizontal.gamma", h->gamma()));
  RETURN_IF_ERROR(Width("horizontal.hidden", h->hidden()));
  RETURN_IF_ERROR(Width("horizontal.latent", h->latent()));
  // The MMD term compares pairs of codes within a batch.
  if (h->local_batch_size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("horizontal.local_batch_size must be >= 2 (the MMD term needs pairs), got ",
                     h->local_batch_size()));
  }
  if (sign_ds && !(h->top_k_ratio() > 0 && h->top_k_ratio() < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("horizontal.top_k_ratio must be in (0, 1), got ", h->top_k_ratio()));
  }
  if (!std::isfinite(h->gamma()) || !std::isfinite(h->local_learning_rate())) {
    return absl::InvalidArgumentError(
        "horizontal.gamma and horizontal.local_learning_rate must be finite");
  }
  return absl::OkStatus();
}

absl::Status ResolveHorizontalPrivacy(v1::PrivacyConfig* p) {
  DefaultsContext context{v1::horizontal};
  RETURN_IF_ERROR(ApplyDefaults(context, "privacy", p, {"mode"}));
  if (!privacy::IsHorizontalMode(p->mode())) {
    return absl::InvalidArgumentError(
        absl::StrCat("privacy.mode '", privacy::ModeName(p->mode()),
                     "' is a vertical mode; topology 'horizontal' runs 'signds' or 'dpfedavg'"));
  }
  if (p->mode() == v1::PrivacyConfig::signds) {
    RETURN_IF_ERROR(OnlyApplicableSettings(
        *p, "privacy.", {"mode", "epsilon", "ledger", "epsilon_budget_against_parties"},
        "signds is pure epsilon-LDP per user: no noise multiplier, clipping or delta"));
  } else {
    constexpr absl::string_view kDpFedAvgSettings[] = {
        "mode",  "epsilon",   "ledger",          "epsilon_budget_against_parties",
        "delta", "clip_norm", "noise_multiplier"};
    RETURN_IF_ERROR(OnlyApplicableSettings(
        *p, "privacy.", kDpFedAvgSettings,
        "dpfedavg clips each sampled user's update and noises each party's sum"));
    context.mode = p->mode();
    RETURN_IF_ERROR(ApplyDefaults(context, "privacy", p, kDpFedAvgSettings));
    RETURN_IF_ERROR(ValidateGaussianSettings(p));
  }
  if (!p->has_epsilon()) {
    return absl::InvalidArgumentError(absl::StrCat("privacy.mode '", privacy::ModeName(p->mode()),
                                                   "' needs privacy.epsilon (each user's budget)"));
  }
  if (!(p->epsilon() > 0 && std::isfinite(p->epsilon()))) {
    return absl::InvalidArgumentError("privacy.epsilon must be finite and > 0");
  }
  return absl::OkStatus();
}

absl::Status ResolveHorizontalRun(v1::CuratorConfig* c) {
  RETURN_IF_ERROR(OnlyApplicableSettings(
      c->model(), "model.", {}, "the horizontal autoencoder's settings are in 'horizontal'"));
  constexpr absl::string_view kTrainingSettings[] = {"rounds", "seed", "threads", "log_every"};
  RETURN_IF_ERROR(
      OnlyApplicableSettings(c->training(), "training.", kTrainingSettings,
                             "the vertical GAN's; the horizontal run's are in 'horizontal'"));
  RETURN_IF_ERROR(
      OnlyApplicableSettings(c->output(), "output.", {"synthetic_csv", "rows", "postgres"},
                             "the horizontal topology publishes its decoder's rows as drawn"));
  v1::TrainingConfig* const t = c->mutable_training();
  // Unset rounds: as many as the users' participation caps allow (ResolveHorizontalPlan).
  RETURN_IF_ERROR(ApplyDefaults({v1::horizontal}, "training", t, kTrainingSettings));
  if (t->has_rounds()) RETURN_IF_ERROR(Positive("training.rounds", t->rounds()));
  RETURN_IF_ERROR(InRange("training.threads", t->threads(), 1, kMaxThreads));
  RETURN_IF_ERROR(Positive("training.log_every", t->log_every()));
  RETURN_IF_ERROR(ResolveHorizontalPrivacy(c->mutable_privacy()));
  return ResolveHorizontalConfig(c->mutable_horizontal(), c->privacy().mode());
}

absl::Status ResolveCuratorConfig(const std::string& base_dir, v1::CuratorConfig* c) {
  if (c->run_id().empty()) return absl::InvalidArgumentError("run_id is required");
  // The curator's own defaults read the run's topology and mode (a fit checkpoints less often).
  RETURN_IF_ERROR(ApplyDefaults({}, "curator", c, {"topology"}));
  DefaultsContext context{c->topology()};
  v1::PrivacyConfig declared = c->privacy();
  RETURN_IF_ERROR(ApplyDefaults(context, "privacy", &declared, {"mode"}));
  context.mode = declared.mode();
  RETURN_IF_ERROR(ApplyDefaults(context, "curator", c));
  if (c->parties_size() == 0) return absl::InvalidArgumentError("the roster ('parties') is empty");
  absl::flat_hash_set<std::string> names;
  for (const std::string& name : c->parties()) {
    RETURN_IF_ERROR(AddUniquePartyName(name, "parties: party", &names));
  }
  RETURN_IF_ERROR(ParseHostPort(c->listen(), "listen").status());
  if (!c->metrics_listen().empty())
    RETURN_IF_ERROR(ParseHostPort(c->metrics_listen(), "metrics_listen").status());
  // The one plaintext port allowed beyond loopback: it serves the health status alone.
  if (!c->health_listen().empty()) {
    RETURN_IF_ERROR(ParseHostPort(c->health_listen(), "health_listen").status());
    if (c->health_listen() == c->listen()) {
      return absl::InvalidArgumentError(absl::StrCat("health_listen '", c->health_listen(),
                                                     "' is the gRPC listen address; give it "
                                                     "its own port"));
    }
  }
  RETURN_IF_ERROR(Positive("round_timeout_seconds", c->round_timeout_seconds()));
  RETURN_IF_ERROR(Positive("join_timeout_seconds", c->join_timeout_seconds()));
  RETURN_IF_ERROR(Positive("reconnect_timeout_seconds", c->reconnect_timeout_seconds()));
  RETURN_IF_ERROR(Positive("checkpoint_every", c->checkpoint_every()));
  RETURN_IF_ERROR(ValidateRegistrationLimits(c->registration_limits()));
  if (c->checkpoint_dir().empty())
    return absl::InvalidArgumentError("checkpoint_dir must not be empty");
  c->set_checkpoint_dir(ResolvePath(base_dir, c->checkpoint_dir()));
  if (c->max_message_bytes() < (1 << 16) || c->max_message_bytes() > (1LL << 30)) {
    return absl::InvalidArgumentError("max_message_bytes must be in [64 KiB, 1 GiB]");
  }
  ResolveTls(base_dir, c->mutable_tls());
  RETURN_IF_ERROR(CheckTls(c->plaintext(), c->tls()));
  if (c->plaintext()) RETURN_IF_ERROR(CheckPlaintextAddress(c->listen(), "listen"));
  if (c->topology() == v1::Topology::horizontal) {
    RETURN_IF_ERROR(ResolveHorizontalRun(c));
    return ResolveOutputConfig(base_dir, c->training(), c->mutable_output());
  }
  if (c->has_horizontal())
    return absl::InvalidArgumentError("'horizontal' needs topology 'horizontal'");
  RETURN_IF_ERROR(ResolveOutputConfig(base_dir, c->training(), c->mutable_output()));
  RETURN_IF_ERROR(ResolvePrivacyConfig(c->mutable_privacy()));
  RETURN_IF_ERROR(RefuseGanOnlySettings(c->privacy().mode(), "training", c->training()));
  RETURN_IF_ERROR(RefuseGanOnlySettings(c->privacy().mode(), "model", c->model()));
  RETURN_IF_ERROR(ResolveModelConfig(c->mutable_model()));
  RETURN_IF_ERROR(ResolveModeDefaults(c->privacy(), c->mutable_training()));
  const v1::PrivacyConfig::Mode mode = c->privacy().mode();
  RETURN_IF_ERROR(ResolveTrainingConfig(c->mutable_training()));
  ResolveConditionedColumn(c->training(), c->mutable_model());
  RETURN_IF_ERROR(CheckPack(c->model(), c->training()));
  // In mode marginals the label column only chooses which pairs are measured.
  if (!c->training().label_column().empty() &&
      privacy::TraitsOf(mode).ledger != privacy::Ledger::kMeasurements) {
    // The release is a DP mechanism; without DP the labels would leave their holder raw.
    if (!privacy::TraitsOf(mode).may_release_label_pairs) {
      return absl::InvalidArgumentError(
          absl::StrCat("training.label_column needs privacy.mode 'dpsgd' or 'strict', not '",
                       privacy::ModeName(mode), "'"));
    }
    if (c->training().marginal_weight() <= 0) {
      return absl::InvalidArgumentError(
          "training.label_column needs the marginal release (training.marginal_weight > 0): the "
          "label pairs are "
          "part of it");
    }
  }
  // dpsgd's D_s step (CuratorModel::PrivateSharedCriticStep) takes each batch row as one
  // example: its per-example gradients and clipping are not defined for packed rows.
  if (c->model().experimental().pack() > 1 &&
      privacy::TraitsOf(c->privacy().mode()).curator_releases_per_step > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.experimental.pack ", c->model().experimental().pack(),
        " cannot be used with privacy.mode 'dpsgd' (its per-example D_s gradients are per row); "
        "set model.experimental.pack to 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::CuratorConfig> LoadCuratorConfig(
    const std::string& path, const std::function<void(v1::CuratorConfig*)>& overrides) {
  return LoadConfig<v1::CuratorConfig>(path, &ResolveCuratorConfig, overrides);
}

absl::Status ResolvePartyConfig(const std::string& base_dir, v1::PartyConfig* c) {
  if (c->name().empty()) return absl::InvalidArgumentError("name is required");
  RETURN_IF_ERROR(ValidatePartyName(c->name(), "name"));
  if (c->curator().empty()) return absl::InvalidArgumentError("curator address is required");
  RETURN_IF_ERROR(ParseHostPort(c->curator(), "curator", /*min_port=*/1).status());
  RETURN_IF_ERROR(ApplyDefaults({}, "party", c));
  const bool horizontal = c->topology() == v1::Topology::horizontal;
  // Exactly one source: a CSV file or a PostgreSQL table.
  const bool postgres = c->has_postgres();
  if (postgres && !c->data().empty()) {
    return absl::InvalidArgumentError(
        "data and postgres both name the party's table: set one (a CSV file, or a PostgreSQL "
        "source)");
  }
  if (!postgres && c->data().empty())
    return absl::InvalidArgumentError("data (a CSV file) or postgres is required");
  if (c->schema().empty()) return absl::InvalidArgumentError("schema is required");
  if (postgres) {
    v1::PostgresSource* source = c->mutable_postgres();
    RETURN_IF_ERROR(ResolvePostgresConnection(base_dir, "postgres.", source->conninfo(),
                                              source->mutable_password_file()));
    if (source->table().empty() == source->query().empty()) {
      return absl::InvalidArgumentError(
          "postgres: set exactly one of table (a table to read) and query (a SELECT)");
    }
  }
  // Horizontal parties share no records, hence no sampling or alignment secrets.
  if (horizontal && !c->secrets().empty()) {
    return absl::InvalidArgumentError(
        "secrets does not apply to topology 'horizontal' (the parties share no records)");
  }
  if (!horizontal && c->secrets().empty()) return absl::InvalidArgumentError("secrets is required");
  RETURN_IF_ERROR(InRange("threads", c->threads(), 1, kMaxThreads));
  RETURN_IF_ERROR(Positive("reconnect_timeout_seconds", c->reconnect_timeout_seconds()));
  RETURN_IF_ERROR(Positive("connect_timeout_seconds", c->connect_timeout_seconds()));
  if (c->max_message_bytes() < (1 << 16) || c->max_message_bytes() > (1LL << 30)) {
    return absl::InvalidArgumentError("max_message_bytes must be in [64 KiB, 1 GiB]");
  }
  c->set_data(ResolvePath(base_dir, c->data()));
  c->set_schema(ResolvePath(base_dir, c->schema()));
  c->set_secrets(ResolvePath(base_dir, c->secrets()));
  // Where the party's own files go by default: beside its CSV, or named after the party.
  const std::string stem = postgres ? c->name() : c->data();
  if (!c->has_checkpoint_dir()) c->set_checkpoint_dir(stem + ".checkpoint");
  if (c->checkpoint_dir().empty())
    return absl::InvalidArgumentError("checkpoint_dir must not be empty");
  c->set_checkpoint_dir(ResolvePath(base_dir, c->checkpoint_dir()));
  ResolveTls(base_dir, c->mutable_tls());
  RETURN_IF_ERROR(horizontal ? ResolveHorizontalPrivacy(c->mutable_privacy())
                             : ResolvePrivacyConfig(c->mutable_privacy()));
  if (c->privacy().ledger().empty()) c->mutable_privacy()->set_ledger(stem + ".ledger");
  c->mutable_privacy()->set_ledger(ResolvePath(base_dir, c->privacy().ledger()));
  RETURN_IF_ERROR(CheckTls(c->plaintext(), c->tls()));
  if (c->plaintext()) RETURN_IF_ERROR(CheckPlaintextAddress(c->curator(), "curator"));
  return absl::OkStatus();
}

absl::StatusOr<v1::PartyConfig> LoadPartyConfig(
    const std::string& path, const std::function<void(v1::PartyConfig*)>& overrides) {
  return LoadConfig<v1::PartyConfig>(path, &ResolvePartyConfig, overrides);
}

}  // namespace vfsynth
