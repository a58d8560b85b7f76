#include "common/config/config.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/base/address.h"
#include "common/base/party_name.h"
#include "common/base/proto_json.h"
#include "common/base/quoted_value.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/privacy/rdp.h"
#include "common/privacy/run_accounting.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace vfsynth {
namespace {

absl::Status Positive(const char* name, double value) {
  if (!(value > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be > 0, got ", value));
  }
  return absl::OkStatus();
}

absl::Status FiniteNonNegative(const char* name, double value) {
  if (!(value >= 0 && std::isfinite(value))) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a finite number >= 0"));
  }
  return absl::OkStatus();
}

// A setting with two spellings.
absl::Status OneOf(const char* name, const std::string& value, const char* first, const char* second) {
  if (value != first && value != second) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be '", first, "' or '", second, "', got ", QuotedValue(value)));
  }
  return absl::OkStatus();
}

// Network widths are bounded so that a typo (an extra zero or five) is a clear error
// here, not a multi-gigabyte allocation failing inside LibTorch.
constexpr int kMaxWidth = 8192;

absl::Status Width(const char* name, int64_t value) {
  if (value < 1 || value > kMaxWidth) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be in [1, ", kMaxWidth, "], got ", value));
  }
  return absl::OkStatus();
}

template <typename Repeated>
absl::Status Widths(const char* name, const Repeated& values) {
  for (auto value : values) RETURN_IF_ERROR(Width(name, value));
  return absl::OkStatus();
}

absl::Status ResolveEnsembleConfig(v1::PrivacyConfig::Mode mode, v1::EnsembleConfig* e) {
  v1::ExperimentalEnsembleConfig* const experimental = e->mutable_experimental();
  // A vote needs many voters to stand out of its noise; a drawn critic needs enough rows.
  if (!e->has_shards()) e->set_shards(mode == v1::PrivacyConfig::pate ? 1024 : 256);
  if (!e->has_shard_hidden()) e->set_shard_hidden(64);
  if (!e->has_shard_batch()) e->set_shard_batch(64);
  if (!e->has_vote_top_k()) e->set_vote_top_k(5);
  if (!e->has_vote_clip()) e->set_vote_clip(1.0);
  if (!e->has_vote_threshold()) e->set_vote_threshold(0.5);
  if (!experimental->has_vote_aggregation()) experimental->set_vote_aggregation("threshold");
  if (!experimental->has_projection_dim()) experimental->set_projection_dim(8);
  if (!experimental->has_gnmax_bins()) experimental->set_gnmax_bins(10);
  RETURN_IF_ERROR(Positive("privacy.ensemble.shards", e->shards()));
  RETURN_IF_ERROR(Width("privacy.ensemble.shard_hidden", e->shard_hidden()));
  RETURN_IF_ERROR(Positive("privacy.ensemble.shard_batch", e->shard_batch()));
  RETURN_IF_ERROR(Positive("privacy.ensemble.vote_top_k", e->vote_top_k()));
  RETURN_IF_ERROR(Positive("privacy.ensemble.vote_clip", e->vote_clip()));
  RETURN_IF_ERROR(Positive("privacy.ensemble.experimental.projection_dim", experimental->projection_dim()));
  RETURN_IF_ERROR(Positive("privacy.ensemble.experimental.gnmax_bins", experimental->gnmax_bins()));
  if (!(e->vote_threshold() >= 0 && e->vote_threshold() <= 1)) {
    return absl::InvalidArgumentError("privacy.ensemble.vote_threshold must be in [0, 1]");
  }
  return OneOf("privacy.ensemble.experimental.vote_aggregation", experimental->vote_aggregation(), "threshold",
               "gnmax");
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
absl::Status OnlyApplicableSettings(const google::protobuf::Message& message, const std::string& prefix,
                                    const absl::flat_hash_set<std::string>& allowed, absl::string_view why) {
  std::vector<const google::protobuf::FieldDescriptor*> set;
  message.GetReflection()->ListFields(message, &set);
  for (const google::protobuf::FieldDescriptor* field : set) {
    if (!allowed.contains(field->name())) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, field->name(), " does not apply: ", why));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResolveModelConfig(v1::ModelConfig* m) {
  v1::ExperimentalModelConfig* const experimental = m->mutable_experimental();
  if (!m->has_z_dim()) m->set_z_dim(64);
  if (m->generator_hidden_size() == 0) {
    m->add_generator_hidden(256);
    m->add_generator_hidden(256);
  }
  // feature_hidden may stay empty: feat_k is then one Linear + LeakyReLU (the default;
  // cross-party structure is left to D_s).
  if (!m->has_feature_dim()) m->set_feature_dim(128);
  if (m->shared_hidden_size() == 0) {
    m->add_shared_hidden(256);
    m->add_shared_hidden(256);
  }
  if (!experimental->has_categorical_output()) experimental->set_categorical_output("gumbel");
  if (!experimental->has_gumbel_tau()) experimental->set_gumbel_tau(0.2);
  if (!experimental->has_leaky_slope()) experimental->set_leaky_slope(0.2);
  if (!experimental->has_generator_norm()) experimental->set_generator_norm("batch");
  if (!experimental->has_generator_towers()) experimental->set_generator_towers("joint");
  if (!experimental->has_shared_critic_weight()) experimental->set_shared_critic_weight(1.0);
  if (!experimental->has_pack()) experimental->set_pack(1);
  RETURN_IF_ERROR(Width("model.z_dim", m->z_dim()));
  RETURN_IF_ERROR(Width("model.feature_dim", m->feature_dim()));
  RETURN_IF_ERROR(Widths("model.generator_hidden", m->generator_hidden()));
  RETURN_IF_ERROR(Widths("model.feature_hidden", m->feature_hidden()));
  RETURN_IF_ERROR(Widths("model.shared_hidden", m->shared_hidden()));
  RETURN_IF_ERROR(Positive("model.experimental.gumbel_tau", experimental->gumbel_tau()));
  RETURN_IF_ERROR(Positive("model.experimental.pack", experimental->pack()));
  if (!(experimental->shared_critic_weight() >= 0 && experimental->shared_critic_weight() <= 100)) {
    return absl::InvalidArgumentError("model.experimental.shared_critic_weight must be in [0, 100]");
  }
  if (experimental->leaky_slope() < 0 || experimental->leaky_slope() >= 1) {
    return absl::InvalidArgumentError("model.experimental.leaky_slope must be in [0, 1)");
  }
  RETURN_IF_ERROR(
      OneOf("model.experimental.categorical_output", experimental->categorical_output(), "gumbel", "softmax"));
  RETURN_IF_ERROR(OneOf("model.experimental.generator_norm", experimental->generator_norm(), "batch", "none"));
  RETURN_IF_ERROR(OneOf("model.experimental.generator_towers", experimental->generator_towers(), "joint", "per_party"));
  if (experimental->generator_private_z() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.experimental.generator_private_z must be >= 0, got ", experimental->generator_private_z()));
  }
  if (experimental->generator_private_z() > 0 && experimental->generator_towers() != "per_party") {
    return absl::InvalidArgumentError(
        "model.experimental.generator_private_z needs model.experimental.generator_towers 'per_party' (a joint "
        "generator has no tower of a party's own to give it to)");
  }
  return absl::OkStatus();
}

absl::Status ResolveTrainingConfig(v1::TrainingConfig* t) {
  v1::ExperimentalTrainingConfig* const experimental = t->mutable_experimental();
  if (!t->has_batch_size()) t->set_batch_size(256);
  // One critic step per generator round (CTGAN's ratio) measured best with and without
  // DP, and 3000 rounds beat 2000 (docs/decisions/defaults.md); under DP only critic
  // steps spend ε.
  if (!t->has_rounds()) t->set_rounds(3000);
  if (!t->has_n_critic()) t->set_n_critic(1);
  if (!t->has_lr_generator()) t->set_lr_generator(2e-4);
  if (!t->has_lr_critic()) t->set_lr_critic(2e-4);
  if (!t->has_beta1()) t->set_beta1(0.5);
  if (!t->has_beta2()) t->set_beta2(0.9);
  if (!t->has_gp_lambda()) t->set_gp_lambda(10.0);
  if (!t->has_seed()) t->set_seed(1);
  if (!t->has_threads()) t->set_threads(2);
  if (!t->has_log_every()) t->set_log_every(50);
  // The weight average measures better on every fidelity measure (docs/decisions/defaults.md);
  // 0 publishes the last iterate.
  if (!experimental->has_generator_average_decay()) experimental->set_generator_average_decay(0.999);
  // The reverse KL pushes G's mass out of cells the released marginals leave (nearly)
  // empty (docs/decisions/defaults.md); it acts only where the marginal loss is on.
  if (!experimental->has_marginal_reverse_weight()) experimental->set_marginal_reverse_weight(1.0);
  if (!experimental->has_marginal_position_bins()) experimental->set_marginal_position_bins(4);
  if (!experimental->has_label_pair_weight()) experimental->set_label_pair_weight(t->marginal_weight());
  RETURN_IF_ERROR(Positive("training.batch_size", t->batch_size()));
  RETURN_IF_ERROR(Positive("training.n_critic", t->n_critic()));
  RETURN_IF_ERROR(Positive("training.lr_generator", t->lr_generator()));
  RETURN_IF_ERROR(Positive("training.lr_critic", t->lr_critic()));
  RETURN_IF_ERROR(Positive("training.threads", t->threads()));
  RETURN_IF_ERROR(Positive("training.log_every", t->log_every()));
  if (t->rounds() < 0) return absl::InvalidArgumentError("training.rounds must be >= 0");
  if (!(experimental->generator_average_decay() >= 0 && experimental->generator_average_decay() < 1)) {
    return absl::InvalidArgumentError("training.experimental.generator_average_decay must be in [0, 1)");
  }
  if (t->gp_lambda() < 0) return absl::InvalidArgumentError("training.gp_lambda must be >= 0");
  RETURN_IF_ERROR(FiniteNonNegative("training.marginal_weight", t->marginal_weight()));
  RETURN_IF_ERROR(FiniteNonNegative("training.experimental.cross_party_independence_weight",
                                    experimental->cross_party_independence_weight()));
  RETURN_IF_ERROR(FiniteNonNegative("training.experimental.label_pair_weight", experimental->label_pair_weight()));
  RETURN_IF_ERROR(
      FiniteNonNegative("training.experimental.marginal_reverse_weight", experimental->marginal_reverse_weight()));
  if (experimental->marginal_position_bins() < 1 || experimental->marginal_position_bins() > 64) {
    return absl::InvalidArgumentError("training.experimental.marginal_position_bins must be in [1, 64]");
  }
  if (experimental->marginal_pair_cells() < 0 || experimental->marginal_pair_cells() > 4096) {
    return absl::InvalidArgumentError("training.experimental.marginal_pair_cells must be in [0, 4096]");
  }
  if (t->beta1() < 0 || t->beta1() >= 1 || t->beta2() < 0 || t->beta2() >= 1) {
    return absl::InvalidArgumentError("training.beta1 and beta2 must be in [0, 1)");
  }
  return absl::OkStatus();
}

namespace {

// The label's share of the budget by default: smaller in dpsgd, whose D_s also conveys
// the label and gains from the budget the labels leave it (docs/decisions/defaults.md).
double DefaultLabelBudgetShare(v1::PrivacyConfig::Mode mode) { return mode == v1::PrivacyConfig::dpsgd ? 0.15 : 0.3; }

// The Gaussian mechanism's settings, as the vertical modes and dpfedavg read them: delta
// (1e-5) and clip_norm (1) defaulted, delta in (0, 1), clip_norm and any noise_multiplier
// finite and > 0.
absl::Status ResolveGaussianSettings(v1::PrivacyConfig* p) {
  if (!p->has_delta()) p->set_delta(1e-5);
  if (!p->has_clip_norm()) p->set_clip_norm(1.0);
  if (!(p->delta() > 0 && p->delta() < 1)) return absl::InvalidArgumentError("privacy.delta must be in (0, 1)");
  if (!(p->clip_norm() > 0 && std::isfinite(p->clip_norm()))) {
    return absl::InvalidArgumentError("privacy.clip_norm must be finite and > 0");
  }
  if (p->has_noise_multiplier() && !(p->noise_multiplier() > 0 && std::isfinite(p->noise_multiplier()))) {
    return absl::InvalidArgumentError("privacy.noise_multiplier must be finite and > 0");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResolvePrivacyConfig(v1::PrivacyConfig* p) {
  v1::ExperimentalPrivacyConfig* const experimental = p->mutable_experimental();
  // strict protects everything that leaves a party (docs/privacy.md); it is the default.
  if (!p->has_mode()) p->set_mode(v1::PrivacyConfig::strict);
  if (!p->has_feature_clip_norm()) p->set_feature_clip_norm(1.0);
  if (!experimental->has_conversion()) experimental->set_conversion("improved");
  const v1::PrivacyConfig::Mode mode = p->mode();
  if (privacy::IsHorizontalMode(mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("privacy.mode '", privacy::ModeName(mode), "' needs topology 'horizontal'"));
  }
  RETURN_IF_ERROR(privacy::ValidateMode(mode));
  RETURN_IF_ERROR(ResolveEnsembleConfig(mode, p->mutable_ensemble()));
  if (mode != v1::PrivacyConfig::none && !p->has_marginal_budget_share()) p->set_marginal_budget_share(0.1);
  if ((mode == v1::PrivacyConfig::dpsgd || mode == v1::PrivacyConfig::strict) &&
      !experimental->has_label_budget_share()) {
    experimental->set_label_budget_share(DefaultLabelBudgetShare(mode));
  }
  if (mode == v1::PrivacyConfig::dpsgd && !experimental->has_shared_critic_budget_share()) {
    experimental->set_shared_critic_budget_share(kDefaultSharedCriticBudgetShare);
  }
  RETURN_IF_ERROR(OneOf("privacy.experimental.conversion", experimental->conversion(), "improved", "classic"));
  RETURN_IF_ERROR(ResolveGaussianSettings(p));
  RETURN_IF_ERROR(Positive("privacy.feature_clip_norm", p->feature_clip_norm()));
  if (mode != v1::PrivacyConfig::none && !p->has_epsilon() && !p->has_noise_multiplier()) {
    return absl::InvalidArgumentError(absl::StrCat("privacy.mode '", privacy::ModeName(mode),
                                                   "' needs privacy.epsilon (the budget) or privacy.noise_multiplier"));
  }
  if (p->has_epsilon()) RETURN_IF_ERROR(Positive("privacy.epsilon", p->epsilon()));
  if (p->has_marginal_noise_multiplier()) {
    RETURN_IF_ERROR(Positive("privacy.marginal_noise_multiplier", p->marginal_noise_multiplier()));
    if (!std::isfinite(p->marginal_noise_multiplier())) {
      return absl::InvalidArgumentError("privacy.marginal_noise_multiplier must be finite");
    }
  }
  if (p->has_marginal_budget_share() && !(p->marginal_budget_share() > 0 && p->marginal_budget_share() < 1)) {
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
    if (mode != v1::PrivacyConfig::dpsgd) {
      return absl::InvalidArgumentError(absl::StrCat(
          "privacy.experimental.shared_critic_budget_share applies to mode 'dpsgd' only (the curator's D_s), not '",
          privacy::ModeName(mode), "'"));
    }
    if (!(experimental->shared_critic_budget_share() > 0 && experimental->shared_critic_budget_share() < 1)) {
      return absl::InvalidArgumentError("privacy.experimental.shared_critic_budget_share must be in (0, 1)");
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

namespace {

// zCDP's ρ of an (ε, δ) budget (Bun & Steinke's conversion, solved for ρ): a scale for
// the one-off releases' shares only; the run's ε is still composed exactly from RDP
// (run_accounting.h).
double BudgetRho(const v1::PrivacyConfig& privacy) {
  const double log_inverse_delta = std::log(1.0 / privacy.delta());
  const double root = std::sqrt(log_inverse_delta + privacy.epsilon()) - std::sqrt(log_inverse_delta);
  return root * root;
}

}  // namespace

double MarginalNoiseMultiplier(const v1::PrivacyConfig& privacy, const v1::TrainingConfig& training,
                               int parties) {
  if (training.marginal_weight() <= 0) return 0;
  if (privacy.has_marginal_noise_multiplier()) return privacy.marginal_noise_multiplier();
  if (!privacy.has_epsilon() || parties < 1) return 30.0;
  // With label pairs the K - 1 parties without the label release their tables too.
  const int releases = parties + (training.label_column().empty() ? 0 : parties - 1);
  return std::sqrt(releases / (2.0 * privacy.marginal_budget_share() * BudgetRho(privacy)));
}

double LabelEpsilon(const v1::PrivacyConfig& privacy, const v1::TrainingConfig& training) {
  if (training.label_column().empty() || training.marginal_weight() <= 0) return 0;
  if (privacy.mode() != v1::PrivacyConfig::dpsgd && privacy.mode() != v1::PrivacyConfig::strict) return 0;
  if (privacy.has_label_epsilon()) return privacy.label_epsilon();
  if (!privacy.has_epsilon()) return kLabelEpsilonWithoutBudget;
  const double share = privacy.experimental().label_budget_share();
  const double rho = BudgetRho(privacy);
  // ρ-zCDP converts to (ε, δ) best at this order; the run's composition ends up near it.
  const double order = 1.0 + std::sqrt(std::log(1.0 / privacy.delta()) / rho);
  return privacy::RandomizedResponseEpsilonForRdp(order * share * rho, order);
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
  if (output->rows() < 0) return absl::InvalidArgumentError("output.rows must be >= 0");
  output->set_synthetic_csv(ResolvePath(base_dir, output->synthetic_csv()));
  if (output->label_column().empty()) output->set_label_column(training.label_column());
  if (!output->has_label_temperature()) {
    output->set_label_temperature(output->label_column().empty() ? 1.0 : kDefaultLabelTemperature);
  }
  const double t = output->label_temperature();
  if (!(t > 0 && t <= 10)) {
    return absl::InvalidArgumentError(absl::StrCat("output.label_temperature must be in (0, 10], got ", t));
  }
  if (t != 1 && output->label_column().empty()) {
    return absl::InvalidArgumentError(
        "output.label_temperature needs output.label_column (the categorical column it applies to)");
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
  if (c->run_id().empty()) c->set_run_id("local");
  if (!c->has_sampling_secret()) c->set_sampling_secret("vfsynth-reference-sampling-secret");
  if (!c->has_alignment_key()) c->set_alignment_key("vfsynth-reference-alignment-key");
  if (c->sampling_secret().empty() || c->alignment_key().empty()) {
    return absl::InvalidArgumentError("sampling_secret and alignment_key must not be empty");
  }
  RETURN_IF_ERROR(ResolveOutputConfig(base_dir, c->training(), c->mutable_output()));
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
                                  absl::Status (*resolve)(const std::string&, Config*)) {
  Config config;
  RETURN_IF_ERROR(LoadJsonFile(path, &config));
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

absl::StatusOr<v1::LocalRunConfig> LoadLocalRunConfig(const std::string& path) {
  return LoadConfig<v1::LocalRunConfig>(path, &ResolveLocalRunConfig);
}

void SetMarginalReleaseDefaults(bool prior, v1::TrainingConfig* training) {
  // Under DP-SGD's noise a critic conveys the marginals poorly; a one-off DP release of
  // them as G's target raises every fidelity measure (docs/decisions/defaults.md).
  if (!training->has_marginal_weight()) training->set_marginal_weight(1.0);
  if (training->marginal_weight() <= 0) return;
  // Within-party pairs of up to 120 cells raise pair trends (docs/decisions/defaults.md).
  if (!training->experimental().has_marginal_pair_cells())
    training->mutable_experimental()->set_marginal_pair_cells(120);
  if (prior && !training->experimental().has_cross_party_independence_weight()) {
    training->mutable_experimental()->set_cross_party_independence_weight(training->marginal_weight());
  }
}

absl::Status ResolveModeDefaults(const v1::PrivacyConfig& privacy, v1::TrainingConfig* t) {
  const v1::PrivacyConfig::Mode mode = privacy.mode();
  if (t->preset() == v1::TrainingConfig::PRESET_UNSPECIFIED) t->set_preset(v1::TrainingConfig::standard);
  const bool large_budget = t->preset() == v1::TrainingConfig::large_budget;
  if (large_budget && (mode != v1::PrivacyConfig::dpsgd || !t->label_column().empty())) {
    return absl::InvalidArgumentError(
        "training.preset 'large_budget' is for privacy.mode dpsgd without training.label_column (its noised "
        "shared critic conveys the dependence across parties only there; docs/configuration.md, \"Presets\")");
  }
  // Without noise more rounds keep paying up to 10000 (docs/decisions/defaults.md).
  if (mode == v1::PrivacyConfig::none && !t->has_rounds()) t->set_rounds(10000);
  if (mode == v1::PrivacyConfig::dpsgd || mode == v1::PrivacyConfig::strict) {
    // Under DP-SGD's noise D_s barely conveys dependence across parties, and G's shared
    // trunk then couples the parties' columns worse than independence would (the most
    // frequent values with each other): the prior at the marginal loss's weight keeps
    // pair trends above independent sampling. With label pairs the release carries the
    // label's dependence, and the prior leaves the label out. In dpsgd with a large
    // budget D_s does convey the dependence over 10000 rounds, which the prior would
    // remove: the large_budget preset. Evidence: docs/decisions/defaults.md.
    SetMarginalReleaseDefaults(/*prior=*/!large_budget, t);
    if (large_budget && !t->has_rounds()) t->set_rounds(10000);
  }
  return absl::OkStatus();
}

absl::Status ResolveHorizontalConfig(v1::HorizontalConfig* h, v1::PrivacyConfig::Mode mode) {
  const bool sign_ds = mode == v1::PrivacyConfig::signds;
  if (!sign_ds) {
    RETURN_IF_ERROR(OnlyApplicableSettings(
        *h, "horizontal.",
        {"users_per_round", "local_epochs", "local_learning_rate", "local_batch_size", "gamma", "hidden", "latent"},
        "SignDS's; dpfedavg samples every user at rate users_per_round / users, with no cap"));
  }
  // DP-FED-WAE's settings (Jiang et al. 2022, Adult): n = 10 users a round, E = 10 local
  // epochs of Adam at 1e-3, alpha = 0.05, each user once, gamma = 1, 64 hidden, 16 latent.
  // dpfedavg: the averaged step's noise has norm about z*C*sqrt(K*d)/n (K parties, d
  // parameters) against at most C of signal, so with d in the tens of thousands n must be
  // in the thousands (McMahan et al. draw hundreds to thousands of users a round); one
  // epoch of SGD at 0.1 locally and the curator's FedAdam at gamma = 3e-3 over its 300 rounds
  // (docs/decisions/horizontal-optimisers.md).
  if (!h->has_users_per_round()) h->set_users_per_round(sign_ds ? 10 : 1000);
  if (!h->has_local_epochs()) h->set_local_epochs(sign_ds ? 10 : 1);
  if (!h->has_local_learning_rate()) h->set_local_learning_rate(sign_ds ? 1e-3 : 0.1);
  if (!h->has_local_batch_size()) h->set_local_batch_size(32);
  if (sign_ds && !h->has_top_k_ratio()) h->set_top_k_ratio(0.05);
  if (sign_ds && !h->has_participation_cap()) h->set_participation_cap(1);
  if (!h->has_gamma()) h->set_gamma(sign_ds ? 1.0 : 3e-3);
  if (!h->has_hidden()) h->set_hidden(64);
  if (!h->has_latent()) h->set_latent(16);
  RETURN_IF_ERROR(Positive("horizontal.users_per_round", h->users_per_round()));
  RETURN_IF_ERROR(Positive("horizontal.local_epochs", h->local_epochs()));
  RETURN_IF_ERROR(Positive("horizontal.local_learning_rate", h->local_learning_rate()));
  if (sign_ds) RETURN_IF_ERROR(Positive("horizontal.participation_cap", h->participation_cap()));
  RETURN_IF_ERROR(Positive("horizontal.gamma", h->gamma()));
  RETURN_IF_ERROR(Width("horizontal.hidden", h->hidden()));
  RETURN_IF_ERROR(Width("horizontal.latent", h->latent()));
  // The MMD term compares pairs of codes within a batch.
  if (h->local_batch_size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "horizontal.local_batch_size must be >= 2 (the MMD term needs pairs), got ", h->local_batch_size()));
  }
  if (sign_ds && !(h->top_k_ratio() > 0 && h->top_k_ratio() < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("horizontal.top_k_ratio must be in (0, 1), got ", h->top_k_ratio()));
  }
  if (!std::isfinite(h->gamma()) || !std::isfinite(h->local_learning_rate())) {
    return absl::InvalidArgumentError("horizontal.gamma and horizontal.local_learning_rate must be finite");
  }
  return absl::OkStatus();
}

absl::Status ResolveHorizontalPrivacy(v1::PrivacyConfig* p) {
  if (!p->has_mode()) p->set_mode(v1::PrivacyConfig::signds);
  if (!privacy::IsHorizontalMode(p->mode())) {
    return absl::InvalidArgumentError(
        absl::StrCat("privacy.mode '", privacy::ModeName(p->mode()),
                     "' is a vertical mode; topology 'horizontal' runs 'signds' or 'dpfedavg'"));
  }
  if (p->mode() == v1::PrivacyConfig::signds) {
    RETURN_IF_ERROR(
        OnlyApplicableSettings(*p, "privacy.", {"mode", "epsilon", "ledger", "epsilon_budget_against_parties"},
                               "signds is pure epsilon-LDP per user: no noise multiplier, clipping or delta"));
  } else {
    RETURN_IF_ERROR(OnlyApplicableSettings(
        *p, "privacy.",
        {"mode", "epsilon", "ledger", "epsilon_budget_against_parties", "delta", "clip_norm", "noise_multiplier"},
        "dpfedavg clips each sampled user's update and noises each party's sum"));
    // Below the norm of one SGD step's update on every suite table (0.035-0.06 at the
    // default local rate): each user's clipped update is its direction, and FedAdam's
    // step does not depend on its scale.
    if (!p->has_clip_norm()) p->set_clip_norm(0.01);
    RETURN_IF_ERROR(ResolveGaussianSettings(p));
  }
  if (!p->has_epsilon()) {
    return absl::InvalidArgumentError(
        absl::StrCat("privacy.mode '", privacy::ModeName(p->mode()), "' needs privacy.epsilon (each user's budget)"));
  }
  if (!(p->epsilon() > 0 && std::isfinite(p->epsilon()))) {
    return absl::InvalidArgumentError("privacy.epsilon must be finite and > 0");
  }
  return absl::OkStatus();
}

absl::Status ResolveHorizontalRun(v1::CuratorConfig* c) {
  RETURN_IF_ERROR(
      OnlyApplicableSettings(c->model(), "model.", {}, "the horizontal autoencoder's settings are in 'horizontal'"));
  RETURN_IF_ERROR(OnlyApplicableSettings(c->training(), "training.", {"rounds", "seed", "threads", "log_every"},
                                         "the vertical GAN's; the horizontal run's are in 'horizontal'"));
  RETURN_IF_ERROR(OnlyApplicableSettings(c->output(), "output.", {"synthetic_csv", "rows"},
                                         "the horizontal topology publishes its decoder's rows as drawn"));
  v1::TrainingConfig* const t = c->mutable_training();
  if (!t->has_seed()) t->set_seed(1);
  if (!t->has_threads()) t->set_threads(2);
  if (!t->has_log_every()) t->set_log_every(50);
  // Unset rounds: as many as the users' participation caps allow (ResolveHorizontalPlan).
  if (t->has_rounds()) RETURN_IF_ERROR(Positive("training.rounds", t->rounds()));
  RETURN_IF_ERROR(Positive("training.threads", t->threads()));
  RETURN_IF_ERROR(Positive("training.log_every", t->log_every()));
  RETURN_IF_ERROR(ResolveHorizontalPrivacy(c->mutable_privacy()));
  return ResolveHorizontalConfig(c->mutable_horizontal(), c->privacy().mode());
}

absl::Status ResolveCuratorConfig(const std::string& base_dir, v1::CuratorConfig* c) {
  if (c->run_id().empty()) return absl::InvalidArgumentError("run_id is required");
  if (!c->has_listen()) c->set_listen("127.0.0.1:50051");
  if (!c->has_plaintext()) c->set_plaintext(false);
  if (!c->has_round_timeout_seconds()) c->set_round_timeout_seconds(60);
  if (!c->has_join_timeout_seconds()) c->set_join_timeout_seconds(300);
  if (!c->has_max_message_bytes()) c->set_max_message_bytes(kDefaultMaxMessageBytes);
  if (!c->has_checkpoint_dir()) c->set_checkpoint_dir("checkpoint");
  if (!c->has_checkpoint_every()) c->set_checkpoint_every(1);
  if (!c->has_reconnect_timeout_seconds()) c->set_reconnect_timeout_seconds(300);
  if (c->parties_size() == 0) return absl::InvalidArgumentError("the roster ('parties') is empty");
  absl::flat_hash_set<std::string> names;
  for (const std::string& name : c->parties()) {
    RETURN_IF_ERROR(AddUniquePartyName(name, "parties: party", &names));
  }
  RETURN_IF_ERROR(ParseHostPort(c->listen(), "listen").status());
  if (!c->metrics_listen().empty()) RETURN_IF_ERROR(ParseHostPort(c->metrics_listen(), "metrics_listen").status());
  RETURN_IF_ERROR(Positive("round_timeout_seconds", c->round_timeout_seconds()));
  RETURN_IF_ERROR(Positive("join_timeout_seconds", c->join_timeout_seconds()));
  RETURN_IF_ERROR(Positive("reconnect_timeout_seconds", c->reconnect_timeout_seconds()));
  RETURN_IF_ERROR(Positive("checkpoint_every", c->checkpoint_every()));
  if (c->checkpoint_dir().empty()) return absl::InvalidArgumentError("checkpoint_dir must not be empty");
  c->set_checkpoint_dir(ResolvePath(base_dir, c->checkpoint_dir()));
  if (c->max_message_bytes() < (1 << 16) || c->max_message_bytes() > (1LL << 30)) {
    return absl::InvalidArgumentError("max_message_bytes must be in [64 KiB, 1 GiB]");
  }
  ResolveTls(base_dir, c->mutable_tls());
  RETURN_IF_ERROR(CheckTls(c->plaintext(), c->tls()));
  if (!c->has_topology()) c->set_topology(v1::Topology::vertical);
  if (c->topology() == v1::Topology::horizontal) {
    RETURN_IF_ERROR(ResolveHorizontalRun(c));
    return ResolveOutputConfig(base_dir, c->training(), c->mutable_output());
  }
  if (c->has_horizontal()) return absl::InvalidArgumentError("'horizontal' needs topology 'horizontal'");
  RETURN_IF_ERROR(ResolveOutputConfig(base_dir, c->training(), c->mutable_output()));
  RETURN_IF_ERROR(ResolvePrivacyConfig(c->mutable_privacy()));
  RETURN_IF_ERROR(ResolveModelConfig(c->mutable_model()));
  RETURN_IF_ERROR(ResolveModeDefaults(c->privacy(), c->mutable_training()));
  const v1::PrivacyConfig::Mode mode = c->privacy().mode();
  RETURN_IF_ERROR(ResolveTrainingConfig(c->mutable_training()));
  ResolveConditionedColumn(c->training(), c->mutable_model());
  RETURN_IF_ERROR(CheckPack(c->model(), c->training()));
  if (!c->training().label_column().empty()) {
    // The release is a DP mechanism; without DP the labels would leave their holder raw.
    if (mode != v1::PrivacyConfig::dpsgd && mode != v1::PrivacyConfig::strict) {
      return absl::InvalidArgumentError(absl::StrCat(
          "training.label_column needs privacy.mode 'dpsgd' or 'strict', not '", privacy::ModeName(mode), "'"));
    }
    if (c->training().marginal_weight() <= 0) {
      return absl::InvalidArgumentError(
          "training.label_column needs the marginal release (training.marginal_weight > 0): the label pairs are "
          "part of it");
    }
  }
  // dpsgd's D_s step (CuratorModel::PrivateSharedCriticStep) takes each batch row as one
  // example: its per-example gradients and clipping are not defined for packed rows.
  if (c->model().experimental().pack() > 1 && c->privacy().mode() == v1::PrivacyConfig::dpsgd) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.experimental.pack ", c->model().experimental().pack(),
                     " cannot be used with privacy.mode 'dpsgd' (its per-example D_s gradients are per row); "
                     "set model.experimental.pack to 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::CuratorConfig> LoadCuratorConfig(const std::string& path) {
  return LoadConfig<v1::CuratorConfig>(path, &ResolveCuratorConfig);
}

absl::Status ResolvePartyConfig(const std::string& base_dir, v1::PartyConfig* c) {
  if (c->name().empty()) return absl::InvalidArgumentError("name is required");
  RETURN_IF_ERROR(ValidatePartyName(c->name(), "name"));
  if (c->curator().empty()) return absl::InvalidArgumentError("curator address is required");
  RETURN_IF_ERROR(ParseHostPort(c->curator(), "curator", /*min_port=*/1).status());
  if (!c->has_topology()) c->set_topology(v1::Topology::vertical);
  const bool horizontal = c->topology() == v1::Topology::horizontal;
  if (c->data().empty() || c->schema().empty()) return absl::InvalidArgumentError("data and schema are required");
  // Horizontal parties share no records, hence no sampling or alignment secrets.
  if (horizontal && !c->secrets().empty()) {
    return absl::InvalidArgumentError("secrets does not apply to topology 'horizontal' (the parties share no records)");
  }
  if (!horizontal && c->secrets().empty()) return absl::InvalidArgumentError("secrets is required");
  if (!c->has_plaintext()) c->set_plaintext(false);
  if (!c->has_threads()) c->set_threads(1);
  if (!c->has_skip_bad_rows()) c->set_skip_bad_rows(false);
  if (!c->has_connect_timeout_seconds()) c->set_connect_timeout_seconds(60);
  if (!c->has_max_message_bytes()) c->set_max_message_bytes(kDefaultMaxMessageBytes);
  if (!c->has_reconnect_timeout_seconds()) c->set_reconnect_timeout_seconds(300);
  RETURN_IF_ERROR(Positive("threads", c->threads()));
  RETURN_IF_ERROR(Positive("reconnect_timeout_seconds", c->reconnect_timeout_seconds()));
  RETURN_IF_ERROR(Positive("connect_timeout_seconds", c->connect_timeout_seconds()));
  if (c->max_message_bytes() < (1 << 16) || c->max_message_bytes() > (1LL << 30)) {
    return absl::InvalidArgumentError("max_message_bytes must be in [64 KiB, 1 GiB]");
  }
  c->set_data(ResolvePath(base_dir, c->data()));
  c->set_schema(ResolvePath(base_dir, c->schema()));
  c->set_secrets(ResolvePath(base_dir, c->secrets()));
  if (!c->has_checkpoint_dir()) c->set_checkpoint_dir(c->data() + ".checkpoint");
  if (c->checkpoint_dir().empty()) return absl::InvalidArgumentError("checkpoint_dir must not be empty");
  c->set_checkpoint_dir(ResolvePath(base_dir, c->checkpoint_dir()));
  ResolveTls(base_dir, c->mutable_tls());
  RETURN_IF_ERROR(horizontal ? ResolveHorizontalPrivacy(c->mutable_privacy())
                             : ResolvePrivacyConfig(c->mutable_privacy()));
  if (c->privacy().ledger().empty()) c->mutable_privacy()->set_ledger(c->data() + ".ledger");
  c->mutable_privacy()->set_ledger(ResolvePath(base_dir, c->privacy().ledger()));
  return CheckTls(c->plaintext(), c->tls());
}

absl::StatusOr<v1::PartyConfig> LoadPartyConfig(const std::string& path) {
  return LoadConfig<v1::PartyConfig>(path, &ResolvePartyConfig);
}

}  // namespace vfsynth
