#include "common/privacy/ledger.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/privacy/ledger_file.h"
#include "common/random/secure_random.h"

namespace vfsynth::privacy {
namespace {

constexpr const char* kMagic = kPrivacyLedgerMagic;
constexpr char kVersion[] = "4";
constexpr char kChargeTag[] = "charge";
constexpr char kReleaseTag[] = "release";

// The header's fields that must match the run's configuration.
LedgerFieldList ConfigFields(const LedgerConfig& config) {
  return {{"run_id", config.run_id},
          {"sampler", SamplerName(config.sampler)},
          {"conversion", ConversionName(config.conversion)},
          {"delta", ExactDouble(config.delta)},
          {"epsilon_budget", ExactDouble(config.epsilon_budget)},
          {"epsilon_budget_unamplified", ExactDouble(config.epsilon_budget_unamplified)}};
}

LedgerFieldList HeaderFields(const LedgerConfig& config, const std::string& id) {
  LedgerFieldList fields = {{"version", kVersion}, {"ledger_id", id}};
  for (auto& field : ConfigFields(config)) fields.push_back(std::move(field));
  return fields;
}

absl::Status ValidateConfig(const LedgerConfig& config) {
  if (!IsLedgerFieldValue(config.run_id)) {
    return absl::InvalidArgumentError(
        "ledger run id must be non-empty without tabs, newlines or '='");
  }
  if (!(config.delta > 0.0 && config.delta < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("delta must be in (0, 1), got ", config.delta));
  }
  if (!(config.epsilon_budget > 0.0) || !(config.epsilon_budget_unamplified > 0.0)) {
    return absl::InvalidArgumentError("epsilon budgets must be > 0");
  }
  return absl::OkStatus();
}

// The configuration a ledger's header records (`ledger`, "privacy ledger <path>", names it).
absl::StatusOr<LedgerConfig> ConfigFromHeader(const LedgerFields& header,
                                              const std::string& ledger) {
  LedgerConfig config;
  config.run_id = HeaderField(header, "run_id");
  absl::StatusOr<Sampler> sampler = ParseSampler(HeaderField(header, "sampler"));
  absl::StatusOr<Conversion> conversion = ParseConversion(HeaderField(header, "conversion"));
  absl::StatusOr<double> delta = LedgerDoubleField(header, "delta", 1);
  absl::StatusOr<double> budget = LedgerDoubleField(header, "epsilon_budget", 1);
  absl::StatusOr<double> unamplified = LedgerDoubleField(header, "epsilon_budget_unamplified", 1);
  for (const absl::Status& status : {sampler.status(), conversion.status(), delta.status(),
                                     budget.status(), unamplified.status()}) {
    if (!status.ok()) {
      return absl::DataLossError(absl::StrCat(ledger, ": its header: ", status.message()));
    }
  }
  config.sampler = *sampler;
  config.conversion = *conversion;
  config.delta = *delta;
  config.epsilon_budget = *budget;
  config.epsilon_budget_unamplified = *unamplified;
  if (absl::Status valid = ValidateConfig(config); !valid.ok()) {
    return absl::DataLossError(absl::StrCat(ledger, ": its header: ", valid.message()));
  }
  return config;
}

// A recorded epsilon against the one recomputed from the charges (slack for the order in
// which the RDP curves were summed).
bool SameEpsilon(double recorded, double recomputed) {
  return recorded == recomputed ||
         std::fabs(recorded - recomputed) <= 1e-6 * std::max(1.0, std::fabs(recomputed));
}

bool SameMechanism(const StepMechanism& a, const StepMechanism& b) {
  return a.sample_rate == b.sample_rate && a.sampler == b.sampler &&
         a.noise_multipliers == b.noise_multipliers &&
         a.randomized_responses == b.randomized_responses;
}

}  // namespace

PrivacyLedger::PrivacyLedger(std::string path, LedgerConfig config,
                             std::unique_ptr<LedgerFile> file)
    : path_(std::move(path)),
      config_(std::move(config)),
      file_(std::move(file)),
      amplified_(config_.sampler),
      unamplified_(config_.sampler) {}

PrivacyLedger::~PrivacyLedger() = default;

absl::StatusOr<std::unique_ptr<PrivacyLedger>> PrivacyLedger::Open(const std::string& path,
                                                                   const LedgerConfig& config) {
  return OpenFile(path, config, /*create=*/true);
}

absl::StatusOr<std::unique_ptr<PrivacyLedger>> PrivacyLedger::OpenExisting(
    const std::string& path, const LedgerConfig& config) {
  return OpenFile(path, config, /*create=*/false);
}

absl::StatusOr<std::unique_ptr<PrivacyLedger>> PrivacyLedger::OpenFile(const std::string& path,
                                                                       const LedgerConfig& config,
                                                                       bool create) {
  RETURN_IF_ERROR(ValidateConfig(config));
  ASSIGN_OR_RETURN(std::unique_ptr<LedgerFile> file,
                   LedgerFile::Open(path, create, "privacy ledger"));
  std::unique_ptr<PrivacyLedger> ledger(new PrivacyLedger(path, config, std::move(file)));
  absl::MutexLock lock(&ledger->mu_);
  if (ledger->file_->lines().empty()) {
    ASSIGN_OR_RETURN(ledger->id_, NewHexSecret());
    RETURN_IF_ERROR(ledger->file_->WriteHeader(kMagic, HeaderFields(config, ledger->id_)));
    spdlog::info("privacy ledger {}: created for run {} (ledger id {})", path, config.run_id,
                 ledger->id_);
    return ledger;
  }
  RETURN_IF_ERROR(ledger->Replay());
  return ledger;
}

absl::StatusOr<LedgerInspection> PrivacyLedger::Inspect(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<LedgerFile> file,
                   LedgerFile::OpenForReading(path, "privacy ledger"));
  ASSIGN_OR_RETURN(const LedgerFields header, file->CheckHeader(kMagic, kVersion, {}));
  ASSIGN_OR_RETURN(const LedgerConfig config, ConfigFromHeader(header, file->name()));
  LedgerInspection inspection;
  inspection.torn_bytes = file->torn_bytes();
  inspection.ledger.reset(new PrivacyLedger(path, config, std::move(file)));
  PrivacyLedger& ledger = *inspection.ledger;
  absl::MutexLock lock(&ledger.mu_);
  inspection.verification = ledger.Replay();
  return inspection;
}

absl::Status PrivacyLedger::Replay() {
  mu_.AssertHeld();
  RETURN_IF_ERROR(ReplayHeader());
  const LedgerBody body = file_->Body();
  for (const LedgerRecord& record : body.records) {
    if (absl::Status replayed = ReplayRecord(record); !replayed.ok()) {
      return absl::DataLossError(
          absl::StrCat(file_->name(), " line ", record.line_no, ": ", replayed.message()));
    }
  }
  RETURN_IF_ERROR(body.status);
  const PrivacySpent spent = SpentLocked();
  spdlog::info(
      "privacy ledger {}: replayed {} rounds (last {}), epsilon {:.4f} (no amplification "
      "{:.4f}) of budget {}",
      path_, spent.rounds, spent.last_round, spent.epsilon, spent.epsilon_unamplified,
      config_.epsilon_budget);
  return absl::OkStatus();
}

absl::Status PrivacyLedger::ReplayRecord(const LedgerRecord& record) {
  if (record.tag == kChargeTag) return ReplayCharge(record);
  if (record.tag != kReleaseTag) return absl::DataLossError(absl::StrCat("unknown record ", record.tag));
  ReleaseEntry release;
  ASSIGN_OR_RETURN(release.round, LedgerIntField(record.fields, "round", record.line_no));
  ASSIGN_OR_RETURN(release.name, LedgerField(record.fields, "name", record.line_no));
  ASSIGN_OR_RETURN(release.sha256, LedgerField(record.fields, "sha256", record.line_no));
  if (records_.count(release.round) == 0 || !releases_.emplace(release.name, release.sha256).second) {
    return absl::DataLossError(
        absl::StrCat("release '", release.name, "' of an uncharged round or recorded twice"));
  }
  release_order_.push_back(std::move(release));
  return absl::OkStatus();
}

absl::Status PrivacyLedger::ReplayCharge(const LedgerRecord& record) {
  const LedgerFields& fields = record.fields;
  const int line_no = record.line_no;
  ChargeEntry charge;
  charge.mechanism.sampler = config_.sampler;
  ASSIGN_OR_RETURN(charge.round, LedgerIntField(fields, "round", line_no));
  ASSIGN_OR_RETURN(charge.steps, LedgerIntField(fields, "steps", line_no));
  ASSIGN_OR_RETURN(charge.mechanism.sample_rate, LedgerDoubleField(fields, "q", line_no));
  ASSIGN_OR_RETURN(const std::string z_list, LedgerField(fields, "z", line_no));
  ASSIGN_OR_RETURN(charge.mechanism.noise_multipliers, LedgerDoubleList(z_list, "z", line_no));
  // Written only for charges with randomized response.
  if (auto rr = fields.find("rr"); rr != fields.end()) {
    ASSIGN_OR_RETURN(charge.mechanism.randomized_responses,
                     LedgerDoubleList(rr->second, "rr", line_no));
  }
  ASSIGN_OR_RETURN(const double recorded, LedgerDoubleField(fields, "epsilon", line_no));
  ASSIGN_OR_RETURN(const double recorded_unamplified,
                   LedgerDoubleField(fields, "epsilon_unamplified", line_no));
  if (!records_.empty() && charge.round <= records_.rbegin()->first) {
    return absl::DataLossError(absl::StrCat("round ", charge.round, " is not increasing"));
  }
  RETURN_IF_ERROR(Apply(charge));
  // The parameters are the record; the epsilons it states must be theirs, or a charge was
  // edited or one before it is missing.
  const ChargeEntry& applied = records_.rbegin()->second;
  if (!SameEpsilon(recorded, applied.epsilon) ||
      !SameEpsilon(recorded_unamplified, applied.epsilon_unamplified)) {
    return absl::DataLossError(absl::StrCat(
        "records epsilon ", ExactDouble(recorded), " (no amplification ",
        ExactDouble(recorded_unamplified), ") but the charges up to it give ",
        ExactDouble(applied.epsilon), " (", ExactDouble(applied.epsilon_unamplified),
        "): the line was edited, or a charge before it is missing"));
  }
  return absl::OkStatus();
}

absl::Status PrivacyLedger::ReplayHeader() {
  ASSIGN_OR_RETURN(const LedgerFields header,
                   file_->CheckHeader(kMagic, kVersion, ConfigFields(config_)));
  ASSIGN_OR_RETURN(id_, HeaderLedgerId(header, absl::StrCat("privacy ledger ", path_)));
  return absl::OkStatus();
}

absl::Status PrivacyLedger::Apply(const ChargeEntry& charge) {
  RETURN_IF_ERROR(ValidateMechanism(charge.mechanism));
  if (charge.steps < 1) {
    return absl::InvalidArgumentError(absl::StrCat("steps must be >= 1, got ", charge.steps));
  }
  StepMechanism exposed = charge.mechanism;
  exposed.sample_rate = 1.0;
  RETURN_IF_ERROR(amplified_.Compose(charge.mechanism, charge.steps));
  RETURN_IF_ERROR(unamplified_.Compose(exposed, charge.steps));
  ASSIGN_OR_RETURN(const EpsilonAndOrder amplified,
                   amplified_.GetEpsilon(config_.delta, config_.conversion));
  ASSIGN_OR_RETURN(const EpsilonAndOrder unamplified,
                   unamplified_.GetEpsilon(config_.delta, config_.conversion));
  ChargeEntry& kept = records_[charge.round] = charge;
  kept.epsilon = amplified.epsilon;
  kept.epsilon_unamplified = unamplified.epsilon;
  steps_ += charge.steps;
  return absl::OkStatus();
}

absl::StatusOr<PrivacySpent> PrivacyLedger::SpentAfterLocked(const StepMechanism& mechanism,
                                                             int64_t steps) const {
  RETURN_IF_ERROR(ValidateMechanism(mechanism));
  if (steps < 0) return absl::InvalidArgumentError(absl::StrCat("steps must be >= 0, got ", steps));
  StepMechanism exposed = mechanism;
  exposed.sample_rate = 1.0;
  ASSIGN_OR_RETURN(std::vector<double> amplified, amplified_.Increment(mechanism, steps));
  ASSIGN_OR_RETURN(std::vector<double> unamplified, unamplified_.Increment(exposed, steps));
  for (size_t i = 0; i < amplified.size(); ++i) {
    amplified[i] += amplified_.rdp()[i];
    unamplified[i] += unamplified_.rdp()[i];
  }
  ASSIGN_OR_RETURN(const EpsilonAndOrder amp, EpsilonFromRdp(amplified_.orders(), amplified,
                                                             config_.delta, config_.conversion));
  ASSIGN_OR_RETURN(const EpsilonAndOrder unamp, EpsilonFromRdp(unamplified_.orders(), unamplified,
                                                               config_.delta, config_.conversion));
  PrivacySpent spent;
  spent.epsilon = amp.epsilon;
  spent.order = amp.order;
  spent.epsilon_unamplified = unamp.epsilon;
  spent.order_unamplified = unamp.order;
  spent.rounds = static_cast<int64_t>(records_.size());
  spent.steps = steps_;
  spent.last_round = records_.empty() ? -1 : records_.rbegin()->first;
  return spent;
}

absl::StatusOr<PrivacySpent> PrivacyLedger::SpentAfter(const StepMechanism& mechanism,
                                                       int64_t steps) const {
  absl::MutexLock lock(&mu_);
  return SpentAfterLocked(mechanism, steps);
}

absl::StatusOr<bool> PrivacyLedger::CanCharge(const StepMechanism& mechanism, int64_t steps) const {
  ASSIGN_OR_RETURN(const PrivacySpent after, SpentAfter(mechanism, steps));
  return after.epsilon <= config_.epsilon_budget &&
         after.epsilon_unamplified <= config_.epsilon_budget_unamplified;
}

absl::Status PrivacyLedger::Charge(int64_t round, const StepMechanism& mechanism, int64_t steps) {
  absl::MutexLock lock(&mu_);
  if (round < 0) return absl::InvalidArgumentError(absl::StrCat("round must be >= 0, got ", round));
  if (steps < 1) return absl::InvalidArgumentError(absl::StrCat("steps must be >= 1, got ", steps));
  if (mechanism.sampler != config_.sampler) {
    return absl::InvalidArgumentError(absl::StrCat("ledger accounts for sampler ",
                                                   SamplerName(config_.sampler), ", not ",
                                                   SamplerName(mechanism.sampler)));
  }
  if (auto it = records_.find(round); it != records_.end()) {
    if (it->second.steps == steps && SameMechanism(it->second.mechanism, mechanism)) {
      spdlog::debug("privacy ledger {}: round {} already charged", path_, round);
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError(
        absl::StrCat("round ", round, " was already charged with different parameters"));
  }
  if (!records_.empty() && round < records_.rbegin()->first) {
    return absl::FailedPreconditionError(absl::StrCat("round ", round,
                                                      " is older than the last "
                                                      "charged round ",
                                                      records_.rbegin()->first));
  }
  ASSIGN_OR_RETURN(const PrivacySpent after, SpentAfterLocked(mechanism, steps));
  if (after.epsilon > config_.epsilon_budget) {
    return absl::ResourceExhaustedError(absl::StrCat("privacy budget exhausted: round ", round,
                                                     " would bring epsilon to ", after.epsilon,
                                                     " > budget ", config_.epsilon_budget));
  }
  if (after.epsilon_unamplified > config_.epsilon_budget_unamplified) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "privacy budget exhausted: round ", round, " would bring the no-amplification epsilon to ",
        after.epsilon_unamplified, " > budget ", config_.epsilon_budget_unamplified));
  }
  auto exact_list = [](const std::vector<double>& values) {
    std::vector<std::string> text;
    for (double value : values) text.push_back(ExactDouble(value));
    return absl::StrJoin(text, ",");
  };
  std::vector<std::pair<std::string, std::string>> fields = {
      {"round", absl::StrCat(round)},
      {"steps", absl::StrCat(steps)},
      {"q", ExactDouble(mechanism.sample_rate)},
      {"z", exact_list(mechanism.noise_multipliers)}};
  if (!mechanism.randomized_responses.empty())
    fields.emplace_back("rr", exact_list(mechanism.randomized_responses));
  fields.insert(fields.end(), {{"epsilon", ExactDouble(after.epsilon)},
                               {"order", ExactDouble(after.order)},
                               {"epsilon_unamplified", ExactDouble(after.epsilon_unamplified)},
                               {"order_unamplified", ExactDouble(after.order_unamplified)}});
  RETURN_IF_ERROR(file_->Append(kChargeTag, fields));
  ChargeEntry charge;
  charge.round = round;
  charge.steps = steps;
  charge.mechanism = mechanism;
  return Apply(charge);
}

absl::Status PrivacyLedger::RecordRelease(int64_t round, const std::string& name,
                                          const std::string& sha256) {
  if (!IsLedgerFieldValue(name) || !IsLedgerFieldValue(sha256)) {
    return absl::InvalidArgumentError(
        "a release's name and digest must be non-empty without tabs, newlines or '='");
  }
  absl::MutexLock lock(&mu_);
  if (records_.count(round) == 0) {
    return absl::FailedPreconditionError(absl::StrCat("privacy ledger ", path_, ": release '", name,
                                                      "' of round ", round,
                                                      ", which is not charged"));
  }
  if (auto it = releases_.find(name); it != releases_.end()) {
    if (it->second == sha256) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("privacy ledger ", path_, " records the release '", name, "' with SHA-256 ",
                     it->second, ", not ", sha256,
                     ": its charge covers that release alone, and another would be released "
                     "without being counted"));
  }
  RETURN_IF_ERROR(file_->Append(
      kReleaseTag, {{"round", absl::StrCat(round)}, {"name", name}, {"sha256", sha256}}));
  releases_[name] = sha256;
  release_order_.push_back({round, name, sha256});
  return absl::OkStatus();
}

std::optional<std::string> PrivacyLedger::ReleaseDigest(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = releases_.find(name);
  if (it == releases_.end()) return std::nullopt;
  return it->second;
}

int64_t PrivacyLedger::charges() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(records_.size());
}

int64_t PrivacyLedger::releases() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(releases_.size());
}

std::vector<ChargeEntry> PrivacyLedger::ChargeHistory() const {
  absl::MutexLock lock(&mu_);
  std::vector<ChargeEntry> charges;
  for (const auto& [round, charge] : records_) charges.push_back(charge);
  return charges;
}

std::vector<ReleaseEntry> PrivacyLedger::Releases() const {
  absl::MutexLock lock(&mu_);
  return release_order_;
}

bool PrivacyLedger::IsCharged(int64_t round) const {
  absl::MutexLock lock(&mu_);
  return records_.count(round) > 0;
}

PrivacySpent PrivacyLedger::Spent() const {
  absl::MutexLock lock(&mu_);
  return SpentLocked();
}

PrivacySpent PrivacyLedger::SpentLocked() const {
  // Zero extra steps of any valid mechanism: the current totals.
  StepMechanism none{{1.0}, 1.0, config_.sampler};
  absl::StatusOr<PrivacySpent> spent = SpentAfterLocked(none, 0);
  return spent.ok() ? *spent : PrivacySpent{};
}

}  // namespace vfsynth::privacy
