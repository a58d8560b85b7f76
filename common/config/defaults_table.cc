#include "common/config/defaults_table.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using Mode = v1::PrivacyConfig::Mode;
using Preset = v1::TrainingConfig::Preset;

constexpr DefaultKind kValue = DefaultKind::kValue;
constexpr DefaultKind kCopy = DefaultKind::kCopy;
constexpr DefaultKind kUnset = DefaultKind::kUnset;
constexpr DefaultKind kComputed = DefaultKind::kComputed;
constexpr DefaultKind kRequired = DefaultKind::kRequired;

DefaultCondition In(std::vector<Mode> modes, Preset preset = v1::TrainingConfig::PRESET_UNSPECIFIED,
                    bool marginal_release = false) {
  DefaultCondition condition;
  condition.modes = std::move(modes);
  condition.preset = preset;
  condition.marginal_release = marginal_release;
  return condition;
}

DefaultCondition On(v1::Topology topology) {
  DefaultCondition condition;
  condition.topology = topology;
  return condition;
}

std::vector<DefaultRow> MakeTable() {
  const DefaultCondition always;
  const DefaultCondition horizontal = On(v1::horizontal);
  // dpsgd and strict add the marginal release by default (without DP it does not help,
  // so the other modes keep their papers' designs).
  const DefaultCondition dp_modes = In({v1::PrivacyConfig::dpsgd, v1::PrivacyConfig::strict});
  const DefaultCondition dp_release =
      In({v1::PrivacyConfig::dpsgd, v1::PrivacyConfig::strict},
         v1::TrainingConfig::PRESET_UNSPECIFIED, /*marginal_release=*/true);
  const DefaultCondition dp_prior = In({v1::PrivacyConfig::dpsgd, v1::PrivacyConfig::strict},
                                       v1::TrainingConfig::standard, /*marginal_release=*/true);
  const DefaultCondition large_budget =
      In({v1::PrivacyConfig::dpsgd}, v1::TrainingConfig::large_budget);
  const DefaultCondition none = In({v1::PrivacyConfig::none});
  const DefaultCondition dpsgd = In({v1::PrivacyConfig::dpsgd});
  const DefaultCondition strict = In({v1::PrivacyConfig::strict});
  const DefaultCondition signds = In({v1::PrivacyConfig::signds});
  const DefaultCondition dpfedavg = In({v1::PrivacyConfig::dpfedavg});
  const DefaultCondition pate = In({v1::PrivacyConfig::pate});
  // The measured-marginals mode's rounds are G's fit steps on the released histograms:
  // larger batches estimate the histograms G is pulled towards with less sampling noise.
  const DefaultCondition marginals = In({v1::PrivacyConfig::marginals});
  // Rows of one path: the conditional ones first (a path's first holding row wins). The
  // evidence for the measured defaults is in docs/decisions/defaults.md.
  return {
      // `vfsynth train-local` (LocalRunConfig).
      {"local.run_id", kValue, "local", always, "name of the run"},
      {"local.parties", kRequired, "", always, "{name, data, schema} per party"},
      {"local.sampling_secret", kValue, "vfsynth-reference-sampling-secret", always,
       "key of the real-batch stream"},
      {"local.alignment_key", kValue, "vfsynth-reference-alignment-key", always,
       "HMAC key of the record order"},
      {"local.skip_bad_rows", kUnset, "false", always, "drop malformed rows instead of failing"},

      {"model.z_dim", kValue, "64", always, "noise dimension"},
      {"model.generator_hidden", kValue, "[256, 256]", always, "G's hidden layers"},
      {"model.feature_hidden", kUnset, "[]", always,
       "feat_k's hidden layers; none: one Linear + LeakyReLU"},
      {"model.feature_dim", kValue, "128", always, "d_h, width of each party's features"},
      {"model.shared_hidden", kValue, "[256, 256]", always, "D_s's hidden layers"},
      {"model.experimental.categorical_output", kValue, "gumbel", always,
       "gumbel or softmax heads"},
      {"model.experimental.gumbel_tau", kValue, "0.2", always, "Gumbel-softmax temperature"},
      {"model.experimental.leaky_slope", kValue, "0.2", always, "LeakyReLU slope in critics"},
      {"model.experimental.generator_norm", kValue, "batch", always, "BatchNorm in G or none"},
      {"model.experimental.generator_towers", kValue, "joint", always,
       "one hidden stack, or one per party"},
      {"model.experimental.shared_critic_weight", kValue, "1", always,
       "D_s's weight in what G learns"},
      {"model.experimental.pack", kValue, "1", always, "rows packed into one D_s input"},
      {"model.experimental.generator_private_z", kUnset, "0", always,
       "each tower's own latent width"},
      {"model.experimental.conditioned_column", kComputed, "training.label_column", always,
       "the categorical column whose head reads the rest of the row"},

      // training.preset comes first: the rows after it read the resolved preset.
      {"training.preset", kValue, "standard", On(v1::vertical), "what the defaults aim at"},
      {"training.batch_size", kValue, "1024", marginals, "G's rows per fit step"},
      {"training.batch_size", kValue, "256", always, "B, real rows per critic step"},
      {"training.rounds", kValue, "10000", none, "without noise more rounds keep paying"},
      {"training.rounds", kValue, "10000", large_budget,
       "D_s conveys the dependence across parties over more rounds"},
      {"training.rounds", kComputed, "by the horizontal plan", horizontal,
       "the users' caps allow, or 300"},
      {"training.rounds", kValue, "2000", marginals, "G's fit steps; more barely move the fit"},
      {"training.rounds", kValue, "3000", always, "generator rounds"},
      {"training.n_critic", kValue, "1", always, "critic steps per generator round"},
      {"training.lr_generator", kValue, "1e-3", marginals, "a fit has no critic to keep pace with"},
      {"training.lr_generator", kValue, "2e-4", always, "G's Adam learning rate"},
      {"training.lr_critic", kValue, "2e-4", always, "the critics' Adam learning rate"},
      {"training.beta1", kValue, "0.5", always, "Adam's beta1"},
      {"training.beta2", kValue, "0.9", always, "Adam's beta2"},
      {"training.gp_lambda", kValue, "10", always, "gradient-penalty weight"},
      {"training.seed", kValue, "1", always, "seed of the curator's streams"},
      {"training.threads", kValue, "2", always, "LibTorch intra-op threads"},
      {"training.log_every", kValue, "50", always, "rounds between progress lines"},
      {"training.marginal_weight", kValue, "1", dp_modes,
       "a DP release of the marginals as G's target"},
      {"training.marginal_weight", kUnset, "0", always, "weight of the marginal loss; 0: off"},
      {"training.label_column", kUnset, "\"\"", always, "label pairs' column; empty: off"},
      {"training.experimental.generator_average_decay", kValue, "0.999", always,
       "decay of G's published average"},
      {"training.experimental.marginal_position_bins", kValue, "4", always,
       "parts of a bin with a position"},
      {"training.experimental.marginal_pair_cells", kValue, "120", dp_release,
       "within-party pairs raise pair trends"},
      {"training.experimental.marginal_pair_cells", kUnset, "0", always,
       "largest released 2-way table; 0: off"},
      // Under DP the noised D_s barely conveys dependence across parties, and G's shared
      // trunk then couples the parties' columns worse than independence would; with a large
      // dpsgd budget D_s does convey it, which the prior would remove.
      {"training.experimental.cross_party_independence_weight", kCopy, "training.marginal_weight",
       dp_prior, "the independence prior at the marginal loss's weight"},
      {"training.experimental.cross_party_independence_weight", kUnset, "0", always,
       "prior's weight; 0: off"},
      {"training.experimental.label_pair_weight", kCopy, "training.marginal_weight", always,
       "weight of the label pairs' loss"},
      {"training.experimental.marginal_reverse_weight", kValue, "1", always,
       "weight of the reverse KL"},

      {"output.synthetic_csv", kUnset, "\"\"", always, "where the synthetic table goes"},
      {"output.rows", kUnset, "0", always, "rows to write; 0: as many as aligned records"},
      {"output.label_column", kComputed, "training.label_column", always, "the table's label"},
      {"output.label_temperature", kComputed, "0.5 with a label column, else 1", always,
       "the label's sampling temperature"},
      {"output.postgres.conninfo", kRequired, "", always, "libpq connection string, no password"},
      {"output.postgres.password_file", kUnset, "\"\"", always, "file holding the password"},
      {"output.postgres.table", kRequired, "", always, "the new table the curator creates"},

      {"privacy.mode", kValue, "signds", horizontal, "SignDS, DP-FED-WAE's mechanism"},
      // At every budget measured (docs/decisions/default-mode.md) the suite scores marginals
      // best, and only there does the run's epsilon hold against the other parties too.
      {"privacy.mode", kValue, "marginals", always,
       "the suite measures it best at epsilon 1 and 10, and its epsilon holds against every "
       "observer"},
      {"privacy.epsilon", kRequired, "unless none", always, "the run's budget"},
      {"privacy.delta", kValue, "1e-5", always, "delta of the guarantee"},
      {"privacy.noise_multiplier", kComputed, "calibrated to epsilon", always,
       "z of every Gaussian release"},
      {"privacy.clip_norm", kValue, "0.01", dpfedavg,
       "below one local step's norm: a user's update is its direction"},
      {"privacy.clip_norm", kValue, "1.0", always, "C, per-example critic-gradient clip"},
      {"privacy.feature_clip_norm", kValue, "1.0", always, "C_f, per-row feature clip"},
      {"privacy.ledger", kComputed, "<data>.ledger, or <name>.ledger with postgres", always,
       "a party's privacy ledger"},
      {"privacy.marginal_noise_multiplier", kComputed, "from marginal_budget_share", always,
       "z_m of the marginal release"},
      {"privacy.marginal_budget_share", kUnset, "0", none, "no release to share the budget with"},
      {"privacy.marginal_budget_share", kValue, "0.1", always,
       "the marginal releases' share of rho"},
      {"privacy.label_epsilon", kComputed, "from experimental.label_budget_share", always,
       "epsilon of the label release"},
      {"privacy.epsilon_budget_against_parties", kUnset, "unset", always,
       "the budget against other parties"},
      {"privacy.measurement.max_pair_cells", kValue, "256", always,
       "largest measured 2-way table; label pairs always"},
      {"privacy.measurement.pair_weight", kValue, "1", always, "a 2-way table's budget weight"},
      {"privacy.measurement.label_pair_weight", kValue, "1", always,
       "a label pair's budget weight"},
      {"privacy.measurement.position_bins", kValue, "4", always, "parts of a numeric bin"},
      {"privacy.measurement.pair_bins", kValue, "8", always,
       "a numeric column's runs of bins in 2-way tables"},
      {"privacy.ensemble.shards", kValue, "1024", pate,
       "a vote needs many voters to stand out of its noise"},
      {"privacy.ensemble.shards", kValue, "256", always, "E, disjoint shards of a party's rows"},
      {"privacy.ensemble.shard_hidden", kValue, "64", always, "width of each shard critic"},
      {"privacy.ensemble.shard_batch", kValue, "64", always, "real rows per shard critic step"},
      {"privacy.ensemble.vote_top_k", kValue, "5", always,
       "pate: coordinates each critic votes on"},
      {"privacy.ensemble.vote_clip", kValue, "1.0", always, "pate: per-coordinate clip c"},
      {"privacy.ensemble.vote_threshold", kValue, "0.5", always, "pate: beta, a fraction of E"},
      {"privacy.ensemble.experimental.vote_aggregation", kValue, "threshold", always,
       "pate: threshold or gnmax"},
      {"privacy.ensemble.experimental.projection_dim", kValue, "8", always,
       "gnmax: projection width p"},
      {"privacy.ensemble.experimental.gnmax_bins", kValue, "10", always, "gnmax: histogram bins"},
      {"privacy.experimental.conversion", kValue, "improved", always,
       "RDP to (epsilon, delta) conversion"},
      {"privacy.experimental.shared_critic_budget_share", kValue, "0.55", dpsgd,
       "measured best for D_s"},
      {"privacy.experimental.shared_critic_budget_share", kUnset, "0", always,
       "D_s's share of a dpsgd step"},
      {"privacy.experimental.label_budget_share", kValue, "0.3", strict,
       "the label release's share of rho"},
      {"privacy.experimental.label_budget_share", kValue, "0.15", dpsgd,
       "dpsgd's D_s conveys the label too"},
      {"privacy.experimental.label_budget_share", kUnset, "0", always, "no label release"},

      // DP-FED-WAE's settings (Jiang et al. 2022, Adult): n = 10 users a round, E = 10 local
      // epochs of Adam at 1e-3, alpha = 0.05, each user once, gamma = 1, 64 hidden, 16 latent.
      // dpfedavg: the averaged step's noise has norm about z*C*sqrt(K*d)/n (K parties, d
      // parameters) against at most C of signal, so with d in the tens of thousands n must be
      // in the thousands (McMahan et al. draw hundreds to thousands of users a round); one
      // epoch of SGD at 0.1 locally and the curator's FedAdam at gamma = 3e-3 over its 300
      // rounds (docs/decisions/horizontal-optimisers.md).
      {"horizontal.users_per_round", kValue, "1000", dpfedavg,
       "noise over n must stay below the signal"},
      {"horizontal.users_per_round", kValue, "10", always, "n, users per round over all parties"},
      {"horizontal.local_epochs", kValue, "1", dpfedavg, "one epoch of SGD"},
      {"horizontal.local_epochs", kValue, "10", always, "E, epochs over a drawn user's rows"},
      {"horizontal.local_learning_rate", kValue, "0.1", dpfedavg, "SGD's step"},
      {"horizontal.local_learning_rate", kValue, "1e-3", always, "the local optimiser's step"},
      {"horizontal.local_batch_size", kValue, "32", always, "rows per local step"},
      {"horizontal.top_k_ratio", kValue, "0.05", signds, "alpha = k/d of SignDS"},
      {"horizontal.participation_cap", kValue, "1", signds, "t_r, rounds a user answers at most"},
      {"horizontal.gamma", kValue, "3e-3", dpfedavg, "FedAdam's learning rate"},
      {"horizontal.gamma", kValue, "1", always, "the curator's step"},
      {"horizontal.hidden", kValue, "64", always, "the autoencoder's hidden width"},
      {"horizontal.latent", kValue, "16", always, "its latent width"},

      {"curator.run_id", kRequired, "", always, "carried by every message"},
      {"curator.listen", kValue, "127.0.0.1:50051", always, "listen address"},
      {"curator.tls.ca", kRequired, "unless plaintext", always, "CA certificate (PEM)"},
      {"curator.tls.cert", kRequired, "unless plaintext", always,
       "the curator's certificate chain"},
      {"curator.tls.key", kRequired, "unless plaintext", always, "the curator's private key"},
      {"curator.plaintext", kValue, "false", always, "no TLS: loopback tests only"},
      {"curator.parties", kRequired, "", always, "the roster, in slice order"},
      {"curator.round_timeout_seconds", kValue, "60", always, "a phase's wait for every party"},
      {"curator.join_timeout_seconds", kValue, "300", always,
       "longest time without any party's step while parties join (register, align, attest)"},
      {"curator.max_message_bytes", kValue, "64 MiB", always, "gRPC receive limit"},
      {"curator.checkpoint_dir", kValue, "checkpoint", always, "directory of the checkpoints"},
      {"curator.checkpoint_every", kValue, "100", marginals,
       "fit steps spend no budget: a crash refits at most these"},
      {"curator.checkpoint_every", kValue, "1", always, "rounds between durable checkpoints"},
      {"curator.reconnect_timeout_seconds", kValue, "300", always,
       "a dropped party's time to rejoin"},
      {"curator.metrics_listen", kUnset, "\"\"", always, "the Prometheus endpoint; empty: off"},
      {"curator.health_listen", kUnset, "\"\"", always,
       "plaintext gRPC health service alone; empty: off"},
      {"curator.topology", kValue, "vertical", always, "who holds what"},
      // What one registration may declare: bounds on the curator's memory per party.
      {"curator.registration_limits.columns", kValue, "1000", always,
       "columns of one party's schema"},
      {"curator.registration_limits.categories_per_column", kValue, "1000", always,
       "categories or declared bins of one column"},
      {"curator.registration_limits.encoded_width", kValue, "4096", always,
       "a party's encoded row width"},

      {"party.name", kRequired, "", always, "must match the certificate"},
      {"party.curator", kRequired, "", always, "host:port of the curator"},
      {"party.tls.ca", kRequired, "unless plaintext", always, "CA certificate (PEM)"},
      {"party.tls.cert", kRequired, "unless plaintext", always, "the party's certificate chain"},
      {"party.tls.key", kRequired, "unless plaintext", always, "the party's private key"},
      {"party.plaintext", kValue, "false", always, "no TLS: loopback tests only"},
      {"party.data", kRequired, "unless postgres", always, "the party's CSV"},
      {"party.schema", kRequired, "", always, "its schema JSON"},
      {"party.secrets", kRequired, "unless horizontal", always, "secrets shared by the parties"},
      {"party.threads", kValue, "1", always, "LibTorch threads"},
      {"party.skip_bad_rows", kValue, "false", always, "drop malformed rows instead of failing"},
      {"party.connect_timeout_seconds", kValue, "60", always, "wait for the curator"},
      {"party.max_message_bytes", kValue, "64 MiB", always, "gRPC receive limit"},
      {"party.checkpoint_dir", kComputed, "<data>.checkpoint, or <name>.checkpoint with postgres",
       always, "critic state and reply journal"},
      {"party.reconnect_timeout_seconds", kValue, "300", always,
       "redialling a curator that went away"},
      {"party.topology", kValue, "vertical", always, "the curator's"},
      {"party.postgres.conninfo", kRequired, "", always, "libpq connection string, no password"},
      {"party.postgres.password_file", kUnset, "\"\"", always, "file holding the password"},
      {"party.postgres.table", kUnset, "\"\"", always, "the table (exactly one of table, query)"},
      {"party.postgres.query", kUnset, "\"\"", always, "a read-only SELECT instead of a table"},
  };
}

absl::string_view SectionOf(absl::string_view path) { return path.substr(0, path.find('.')); }

// `text` as an integer: digits, optionally followed by " MiB".
bool ParseInteger(absl::string_view text, int64_t* value) {
  int64_t unit = 1;
  if (absl::ConsumeSuffix(&text, " MiB")) unit = int64_t{1} << 20;
  if (!absl::SimpleAtoi(text, value)) return false;
  *value *= unit;
  return true;
}

// Sets (or, repeated, adds) `field` of `message` to `text`.
absl::Status SetFromText(const FieldDescriptor* field, absl::string_view text, Message* message) {
  const Reflection* reflection = message->GetReflection();
  const bool repeated = field->is_repeated();
  int64_t integer = 0;
  double real = 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      if (!ParseInteger(text, &integer)) break;
      repeated ? reflection->AddInt32(message, field, static_cast<int32_t>(integer))
               : reflection->SetInt32(message, field, static_cast<int32_t>(integer));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_INT64:
      if (!ParseInteger(text, &integer) || repeated) break;
      reflection->SetInt64(message, field, integer);
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_UINT64:
      if (!ParseInteger(text, &integer) || integer < 0 || repeated) break;
      reflection->SetUInt64(message, field, static_cast<uint64_t>(integer));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_DOUBLE:
      if (!absl::SimpleAtod(text, &real) || repeated) break;
      reflection->SetDouble(message, field, real);
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_BOOL:
      if ((text != "true" && text != "false") || repeated) break;
      reflection->SetBool(message, field, text == "true");
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_STRING:
      if (repeated) break;
      reflection->SetString(message, field, std::string(text));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_ENUM:
      if (const auto* value = field->enum_type()->FindValueByName(std::string(text));
          value != nullptr && !repeated) {
        reflection->SetEnum(message, field, value);
        return absl::OkStatus();
      }
      break;
    default:
      break;
  }
  return absl::InternalError(
      absl::StrCat("defaults table: '", text, "' does not fit ", field->full_name()));
}

absl::Status SetValue(const FieldDescriptor* field, absl::string_view text, Message* message) {
  if (!field->is_repeated()) return SetFromText(field, text, message);
  if (!absl::ConsumePrefix(&text, "[") || !absl::ConsumeSuffix(&text, "]")) {
    return absl::InternalError(
        absl::StrCat("defaults table: ", field->full_name(), " needs a [list]"));
  }
  for (absl::string_view item : absl::StrSplit(text, ", ", absl::SkipEmpty())) {
    RETURN_IF_ERROR(SetFromText(field, item, message));
  }
  return absl::OkStatus();
}

// The message holding the last field of `names` under `message`, walking down
// submessages; nullptr if one is missing.
const Message* Parent(const Message& message, const std::vector<absl::string_view>& names) {
  const Message* current = &message;
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    const FieldDescriptor* field = current->GetDescriptor()->FindFieldByName(std::string(names[i]));
    if (field == nullptr || field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) return nullptr;
    if (!current->GetReflection()->HasField(*current, field)) return nullptr;
    current = &current->GetReflection()->GetMessage(*current, field);
  }
  return current;
}

// As Parent, creating missing submessages.
Message* MutableParent(Message* message, const std::vector<absl::string_view>& names) {
  Message* current = message;
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    const FieldDescriptor* field = current->GetDescriptor()->FindFieldByName(std::string(names[i]));
    if (field == nullptr || field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) return nullptr;
    current = current->GetReflection()->MutableMessage(current, field);
  }
  return current;
}

// Whether the field `names` lead to is set: present, non-empty, or (without presence)
// other than its zero value.
bool IsSet(const Message& message, const std::vector<absl::string_view>& names) {
  const Message* parent = Parent(message, names);
  if (parent == nullptr) return false;
  const FieldDescriptor* field =
      parent->GetDescriptor()->FindFieldByName(std::string(names.back()));
  if (field == nullptr) return false;
  if (field->is_repeated()) return parent->GetReflection()->FieldSize(*parent, field) > 0;
  return parent->GetReflection()->HasField(*parent, field);
}

std::vector<absl::string_view> FieldNames(absl::string_view path) {
  std::vector<absl::string_view> names = absl::StrSplit(path, '.');
  names.erase(names.begin());  // the section
  return names;
}

absl::Status Apply(const DefaultRow& row, Message* message) {
  const std::vector<absl::string_view> names = FieldNames(row.path);
  if (IsSet(*message, names)) return absl::OkStatus();
  Message* parent = MutableParent(message, names);
  const FieldDescriptor* field =
      parent == nullptr ? nullptr
                        : parent->GetDescriptor()->FindFieldByName(std::string(names.back()));
  if (field == nullptr)
    return absl::InternalError(absl::StrCat("defaults table: no field ", row.path));
  if (row.kind == kValue) return SetValue(field, row.value, parent);
  // kCopy: a double of the section's own message, as resolved so far (unset reads 0).
  const std::vector<absl::string_view> source_names = FieldNames(row.value);
  const FieldDescriptor* source =
      source_names.size() == 1 && SectionOf(row.value) == SectionOf(row.path)
          ? message->GetDescriptor()->FindFieldByName(std::string(source_names[0]))
          : nullptr;
  if (source == nullptr || source->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE ||
      field->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE) {
    return absl::InternalError(
        absl::StrCat("defaults table: ", row.path, " cannot copy ", row.value));
  }
  parent->GetReflection()->SetDouble(parent, field,
                                     message->GetReflection()->GetDouble(*message, source));
  return absl::OkStatus();
}

std::string ConditionText(const DefaultCondition& condition) {
  std::vector<std::string> parts;
  if (condition.topology != v1::TOPOLOGY_UNSPECIFIED)
    parts.push_back(v1::Topology_Name(condition.topology));
  if (!condition.modes.empty()) {
    parts.push_back(absl::StrJoin(condition.modes, "/", [](std::string* out, Mode mode) {
      absl::StrAppend(out, v1::PrivacyConfig::Mode_Name(mode));
    }));
  }
  if (condition.preset != v1::TrainingConfig::PRESET_UNSPECIFIED) {
    parts.push_back(v1::TrainingConfig::Preset_Name(condition.preset));
  }
  if (condition.marginal_release) parts.push_back("marginal_weight > 0");
  return absl::StrJoin(parts, ", ");
}

std::string ValueText(const DefaultRow& row) {
  switch (row.kind) {
    case kComputed:
      return absl::StrCat("computed: ", row.value);
    case kRequired:
      return row.value.empty() ? "required" : absl::StrCat("required ", row.value);
    default:
      return row.value;
  }
}

}  // namespace

const std::vector<DefaultRow>& DefaultsTable() {
  static const std::vector<DefaultRow>* const table = new std::vector<DefaultRow>(MakeTable());
  return *table;
}

bool Holds(const DefaultCondition& condition, const DefaultsContext& context) {
  if (condition.topology != v1::TOPOLOGY_UNSPECIFIED && condition.topology != context.topology)
    return false;
  if (!condition.modes.empty() && !absl::c_linear_search(condition.modes, context.mode))
    return false;
  if (condition.preset != v1::TrainingConfig::PRESET_UNSPECIFIED &&
      condition.preset != context.preset)
    return false;
  return !condition.marginal_release ||
         (context.training != nullptr && context.training->marginal_weight() > 0);
}

const DefaultRow* DefaultFor(absl::string_view path, const DefaultsContext& context) {
  for (const DefaultRow& row : DefaultsTable()) {
    if (row.path == path && Holds(row.when, context)) return &row;
  }
  return nullptr;
}

absl::Status ApplyDefaults(const DefaultsContext& context, absl::string_view section,
                           Message* message, absl::Span<const absl::string_view> only) {
  absl::flat_hash_set<absl::string_view> decided;
  for (const DefaultRow& row : DefaultsTable()) {
    if (SectionOf(row.path) != section || decided.contains(row.path)) continue;
    if (!only.empty() && !absl::c_linear_search(only, row.path.substr(section.size() + 1)))
      continue;
    if (!Holds(row.when, context)) continue;
    decided.insert(row.path);
    if (row.kind == kValue || row.kind == kCopy) RETURN_IF_ERROR(Apply(row, message));
  }
  return absl::OkStatus();
}

const Descriptor* SectionDescriptor(absl::string_view section) {
  if (section == "model") return v1::ModelConfig::descriptor();
  if (section == "training") return v1::TrainingConfig::descriptor();
  if (section == "output") return v1::OutputConfig::descriptor();
  if (section == "privacy") return v1::PrivacyConfig::descriptor();
  if (section == "horizontal") return v1::HorizontalConfig::descriptor();
  if (section == "local") return v1::LocalRunConfig::descriptor();
  if (section == "curator") return v1::CuratorConfig::descriptor();
  if (section == "party") return v1::PartyConfig::descriptor();
  return nullptr;
}

const FieldDescriptor* FieldAt(absl::string_view path) {
  const Descriptor* message = SectionDescriptor(SectionOf(path));
  const FieldDescriptor* field = nullptr;
  for (absl::string_view name : FieldNames(path)) {
    if (message == nullptr) return nullptr;
    field = message->FindFieldByName(std::string(name));
    if (field == nullptr) return nullptr;
    message = field->message_type();
  }
  return field;
}

std::string DocumentedDefault(absl::string_view path) {
  std::string unconditional;
  std::vector<std::string> conditional;
  for (const DefaultRow& row : DefaultsTable()) {
    if (row.path != path) continue;
    const std::string condition = ConditionText(row.when);
    if (condition.empty()) {
      unconditional = ValueText(row);
    } else {
      conditional.push_back(absl::StrCat(condition, ": ", ValueText(row)));
    }
  }
  if (!unconditional.empty()) conditional.insert(conditional.begin(), unconditional);
  return absl::StrJoin(conditional, "; ");
}

}  // namespace vfsynth
