#include "common/privacy/ledger.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/privacy/secure_random.h"
#include "common/base/file_io.h"
#include "common/base/fnv.h"
#include "common/base/status_macros.h"

namespace vfsynth::privacy {
namespace {

constexpr char kMagic[] = "vfsynth-privacy-ledger";
constexpr char kVersion[] = "3";
constexpr char kChargeTag[] = "charge";
constexpr char kReleaseTag[] = "release";
constexpr char kChecksumKey[] = "fnv64=";

using Fields = std::map<std::string, std::string>;

// Shortest text that parses back to the same double.
std::string ExactDouble(double value) { return absl::StrFormat("%.17g", value); }

// "<tag>\tk=v\t...\tfnv64=<hex>\n"
std::string FormatLine(absl::string_view tag,
                       const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string body(tag);
  for (const auto& [key, value] : fields) absl::StrAppend(&body, "\t", key, "=", value);
  return absl::StrCat(body, "\t", kChecksumKey, absl::Hex(Fnv1a64(body), absl::kZeroPad16), "\n");
}

// Parses one complete line (without '\n'); checks the checksum.
absl::StatusOr<std::pair<std::string, Fields>> ParseLine(absl::string_view line, int line_no) {
  const size_t last_tab = line.rfind('\t');
  if (last_tab == absl::string_view::npos ||
      !absl::StartsWith(line.substr(last_tab + 1), kChecksumKey)) {
    return absl::DataLossError(absl::StrCat("ledger line ", line_no, " has no checksum"));
  }
  const absl::string_view body = line.substr(0, last_tab);
  uint64_t checksum = 0;
  if (!absl::SimpleHexAtoi(line.substr(last_tab + 1 + std::strlen(kChecksumKey)), &checksum) ||
      checksum != Fnv1a64(body)) {
    return absl::DataLossError(absl::StrCat("ledger line ", line_no, " fails its checksum"));
  }
  std::vector<absl::string_view> parts = absl::StrSplit(body, '\t');
  Fields fields;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(parts[i], absl::MaxSplits('=', 1));
    fields[kv.first] = kv.second;
  }
  return std::make_pair(std::string(parts[0]), std::move(fields));
}

absl::StatusOr<std::string> Field(const Fields& fields, const std::string& key, int line_no) {
  auto it = fields.find(key);
  if (it == fields.end()) {
    return absl::DataLossError(absl::StrCat("ledger line ", line_no, " lacks ", key));
  }
  return it->second;
}

absl::StatusOr<double> DoubleField(const Fields& fields, const std::string& key, int line_no) {
  ASSIGN_OR_RETURN(const std::string text, Field(fields, key, line_no));
  double value = 0.0;
  if (!absl::SimpleAtod(text, &value)) {
    return absl::DataLossError(absl::StrCat("ledger line ", line_no, ": bad ", key, " '", text, "'"));
  }
  return value;
}

// A comma-separated list of doubles; "" is the empty list.
absl::StatusOr<std::vector<double>> DoubleList(const std::string& text, const std::string& key, int line_no) {
  std::vector<double> values;
  if (text.empty()) return values;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    double value = 0.0;
    if (!absl::SimpleAtod(item, &value)) {
      return absl::DataLossError(absl::StrCat("ledger line ", line_no, ": bad ", key, " '", text, "'"));
    }
    values.push_back(value);
  }
  return values;
}

absl::StatusOr<int64_t> IntField(const Fields& fields, const std::string& key, int line_no) {
  ASSIGN_OR_RETURN(const std::string text, Field(fields, key, line_no));
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::DataLossError(absl::StrCat("ledger line ", line_no, ": bad ", key, " '", text, "'"));
  }
  return value;
}

// The header's fields that must match the run's configuration.
std::vector<std::pair<std::string, std::string>> ConfigFields(const LedgerConfig& config) {
  return {{"run_id", config.run_id},
          {"sampler", SamplerName(config.sampler)},
          {"conversion", ConversionName(config.conversion)},
          {"delta", ExactDouble(config.delta)},
          {"epsilon_budget", ExactDouble(config.epsilon_budget)},
          {"epsilon_budget_unamplified", ExactDouble(config.epsilon_budget_unamplified)}};
}

std::string HeaderLine(const LedgerConfig& config, const std::string& id) {
  std::vector<std::pair<std::string, std::string>> fields = {{"version", kVersion}, {"ledger_id", id}};
  for (auto& field : ConfigFields(config)) fields.push_back(std::move(field));
  return FormatLine(kMagic, fields);
}

// A value the line format can hold: non-empty, no tabs, newlines or '='.
bool IsFieldValue(const std::string& value) {
  return !value.empty() && value.find_first_of("\t\n\r=") == std::string::npos;
}

absl::Status ValidateConfig(const LedgerConfig& config) {
  if (!IsFieldValue(config.run_id)) {
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

bool SameMechanism(const StepMechanism& a, const StepMechanism& b) {
  return a.sample_rate == b.sample_rate && a.sampler == b.sampler &&
         a.noise_multipliers == b.noise_multipliers && a.randomized_responses == b.randomized_responses;
}

}  // namespace

PrivacyLedger::PrivacyLedger(std::string path, LedgerConfig config, int fd)
    : path_(std::move(path)),
      config_(std::move(config)),
      fd_(fd),
      amplified_(config_.sampler),
      unamplified_(config_.sampler) {}

PrivacyLedger::~PrivacyLedger() { ::close(fd_); }  // also releases the flock

absl::StatusOr<std::unique_ptr<PrivacyLedger>> PrivacyLedger::Open(const std::string& path,
                                                                   const LedgerConfig& config) {
  return OpenFile(path, config, /*create=*/true);
}

absl::StatusOr<std::unique_ptr<PrivacyLedger>> PrivacyLedger::OpenExisting(const std::string& path,
                                                                           const LedgerConfig& config) {
  return OpenFile(path, config, /*create=*/false);
}

absl::StatusOr<std::unique_ptr<PrivacyLedger>> PrivacyLedger::OpenFile(const std::string& path,
                                                                       const LedgerConfig& config, bool create) {
  RETURN_IF_ERROR(ValidateConfig(config));
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
  if (fd < 0 && errno == ENOENT && !create) {
    return absl::NotFoundError(absl::StrCat("privacy ledger ", path, " does not exist"));
  }
  if (fd < 0) return ErrnoError("cannot open privacy ledger", path);
  // One writer per ledger: a second daemon on the same file would double-spend.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("privacy ledger ", path, " is in use by another process"));
  }
  std::unique_ptr<PrivacyLedger> ledger(new PrivacyLedger(path, config, fd));
  ASSIGN_OR_RETURN(std::string contents, ReadFile(path));

  // A crash mid-append leaves a last line without '\n'. Its charge never
  // completed, so nothing was released for it: drop it.
  const size_t last_newline = contents.rfind('\n');
  const size_t complete = last_newline == std::string::npos ? 0 : last_newline + 1;
  if (complete < contents.size()) {
    spdlog::warn("privacy ledger {}: dropping a torn last line ({} bytes) left by a crash", path,
                 contents.size() - complete);
    if (::ftruncate(fd, static_cast<off_t>(complete)) != 0 || ::fsync(fd) != 0) {
      return ErrnoError("cannot truncate torn privacy ledger", path);
    }
    contents.resize(complete);
  }
  absl::MutexLock lock(&ledger->mu_);
  ledger->file_size_ = static_cast<int64_t>(contents.size());
  if (contents.empty()) {
    if (!create) {
      return absl::NotFoundError(absl::StrCat("privacy ledger ", path, " is empty (it has no header)"));
    }
    ASSIGN_OR_RETURN(ledger->id_, NewHexSecret());
    RETURN_IF_ERROR(ledger->AppendLine(HeaderLine(config, ledger->id_)));
    RETURN_IF_ERROR(SyncDirectoryOf(path));
    spdlog::info("privacy ledger {}: created for run {} (ledger id {})", path, config.run_id, ledger->id_);
    return ledger;
  }
  RETURN_IF_ERROR(ledger->Replay(contents));
  return ledger;
}

absl::Status PrivacyLedger::Replay(const std::string& contents) {
  mu_.AssertHeld();
  std::vector<absl::string_view> lines = absl::StrSplit(contents, '\n', absl::SkipEmpty());
  if (lines.empty()) return absl::DataLossError(absl::StrCat(path_, " has no ledger header"));
  RETURN_IF_ERROR(ReplayHeader(lines[0]));
  for (size_t i = 1; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    ASSIGN_OR_RETURN(auto parsed, ParseLine(lines[i], line_no));
    const auto& [tag, fields] = parsed;
    if (tag == kReleaseTag) {
      ASSIGN_OR_RETURN(const int64_t round, IntField(fields, "round", line_no));
      ASSIGN_OR_RETURN(const std::string name, Field(fields, "name", line_no));
      ASSIGN_OR_RETURN(const std::string sha256, Field(fields, "sha256", line_no));
      if (records_.count(round) == 0 || !releases_.emplace(name, sha256).second) {
        return absl::DataLossError(absl::StrCat("ledger line ", line_no, ": release '", name,
                                                "' of an uncharged round or recorded twice"));
      }
      continue;
    }
    if (tag != kChargeTag) {
      return absl::DataLossError(absl::StrCat("ledger line ", line_no, ": unknown record ", tag));
    }
    Record record;
    record.mechanism.sampler = config_.sampler;
    ASSIGN_OR_RETURN(record.round, IntField(fields, "round", line_no));
    ASSIGN_OR_RETURN(record.steps, IntField(fields, "steps", line_no));
    ASSIGN_OR_RETURN(record.mechanism.sample_rate, DoubleField(fields, "q", line_no));
    ASSIGN_OR_RETURN(const std::string z_list, Field(fields, "z", line_no));
    ASSIGN_OR_RETURN(record.mechanism.noise_multipliers, DoubleList(z_list, "z", line_no));
    // Written only for charges with randomized response.
    if (auto rr = fields.find("rr"); rr != fields.end()) {
      ASSIGN_OR_RETURN(record.mechanism.randomized_responses, DoubleList(rr->second, "rr", line_no));
    }
    ASSIGN_OR_RETURN(const double recorded_eps, DoubleField(fields, "epsilon", line_no));
    if (!records_.empty() && record.round <= records_.rbegin()->first) {
      return absl::DataLossError(
          absl::StrCat("ledger line ", line_no, ": round ", record.round, " is not increasing"));
    }
    if (absl::Status s = Apply(record); !s.ok()) {
      return absl::DataLossError(absl::StrCat("ledger line ", line_no, ": ", s.message()));
    }
    ASSIGN_OR_RETURN(const EpsilonAndOrder now, amplified_.GetEpsilon(config_.delta,
                                                                      config_.conversion));
    // A newer accountant may compute a slightly different ε; the parameters
    // are the record, the stored ε is only for humans.
    if (std::fabs(now.epsilon - recorded_eps) > 1e-6 * std::max(1.0, recorded_eps)) {
      spdlog::warn("privacy ledger {} line {}: recorded epsilon {} but recomputed {}", path_,
                   line_no, recorded_eps, now.epsilon);
    }
  }
  const PrivacySpent spent = SpentLocked();
  spdlog::info("privacy ledger {}: replayed {} rounds (last {}), epsilon {:.4f} (no amplification "
               "{:.4f}) of budget {}",
               path_, spent.rounds, spent.last_round, spent.epsilon, spent.epsilon_unamplified,
               config_.epsilon_budget);
  return absl::OkStatus();
}

absl::Status PrivacyLedger::ReplayHeader(absl::string_view line) {
  ASSIGN_OR_RETURN(auto header, ParseLine(line, 1));
  auto field = [&header](const std::string& key) {
    auto it = header.second.find(key);
    return it == header.second.end() ? std::string("<missing>") : it->second;
  };
  if (header.first != kMagic) {
    return absl::DataLossError(absl::StrCat(path_, " is not a vfsynth privacy ledger"));
  }
  if (field("version") != kVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "privacy ledger ", path_, " has format version ", field("version"), "; this build reads version ", kVersion,
        " only: finish its run with the build that started it, or start a new run with a new ledger"));
  }
  for (const auto& [key, expected] : ConfigFields(config_)) {
    if (field(key) != expected) {
      return absl::FailedPreconditionError(
          absl::StrCat("privacy ledger ", path_, " belongs to another run or configuration: ", key,
                       " is '", field(key), "', this run has '", expected, "'"));
    }
  }
  id_ = field("ledger_id");
  if (!IsFieldValue(id_) || id_ == "<missing>") {
    return absl::DataLossError(absl::StrCat("privacy ledger ", path_, " has no ledger id in its header"));
  }
  return absl::OkStatus();
}

absl::Status PrivacyLedger::Apply(const Record& record) {
  RETURN_IF_ERROR(ValidateMechanism(record.mechanism));
  if (record.steps < 1) {
    return absl::InvalidArgumentError(absl::StrCat("steps must be >= 1, got ", record.steps));
  }
  StepMechanism exposed = record.mechanism;
  exposed.sample_rate = 1.0;
  RETURN_IF_ERROR(amplified_.Compose(record.mechanism, record.steps));
  RETURN_IF_ERROR(unamplified_.Compose(exposed, record.steps));
  records_[record.round] = record;
  steps_ += record.steps;
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
  ASSIGN_OR_RETURN(const EpsilonAndOrder unamp,
                   EpsilonFromRdp(unamplified_.orders(), unamplified, config_.delta,
                                  config_.conversion));
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

absl::StatusOr<bool> PrivacyLedger::CanCharge(const StepMechanism& mechanism,
                                              int64_t steps) const {
  ASSIGN_OR_RETURN(const PrivacySpent after, SpentAfter(mechanism, steps));
  return after.epsilon <= config_.epsilon_budget &&
         after.epsilon_unamplified <= config_.epsilon_budget_unamplified;
}

absl::Status PrivacyLedger::Charge(int64_t round, const StepMechanism& mechanism,
                                   int64_t steps) {
  absl::MutexLock lock(&mu_);
  if (broken_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "privacy ledger ", path_, " had a failed write; reopen it before charging again"));
  }
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
    return absl::FailedPreconditionError(absl::StrCat(
        "round ", round, " was already charged with different parameters"));
  }
  if (!records_.empty() && round < records_.rbegin()->first) {
    return absl::FailedPreconditionError(absl::StrCat("round ", round, " is older than the last "
                                                      "charged round ", records_.rbegin()->first));
  }
  ASSIGN_OR_RETURN(const PrivacySpent after, SpentAfterLocked(mechanism, steps));
  if (after.epsilon > config_.epsilon_budget) {
    return absl::ResourceExhaustedError(
        absl::StrCat("privacy budget exhausted: round ", round, " would bring epsilon to ",
                     after.epsilon, " > budget ", config_.epsilon_budget));
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
  if (!mechanism.randomized_responses.empty()) fields.emplace_back("rr", exact_list(mechanism.randomized_responses));
  fields.insert(fields.end(), {{"epsilon", ExactDouble(after.epsilon)},
                               {"order", ExactDouble(after.order)},
                               {"epsilon_unamplified", ExactDouble(after.epsilon_unamplified)},
                               {"order_unamplified", ExactDouble(after.order_unamplified)}});
  RETURN_IF_ERROR(AppendLine(FormatLine(kChargeTag, fields)));
  return Apply(Record{round, steps, mechanism});
}

absl::Status PrivacyLedger::AppendLine(const std::string& line) {
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  if (written == line.size() && ::fsync(fd_) == 0) {
    file_size_ += static_cast<int64_t>(line.size());
    return absl::OkStatus();
  }
  absl::Status error = ErrnoError("cannot append to privacy ledger", path_);
  // Undo a partial line so the next append does not glue onto it; if even
  // that fails, refuse further charges (the replay on reopen will sort it out).
  if (::ftruncate(fd_, static_cast<off_t>(file_size_)) != 0 || ::fsync(fd_) != 0) broken_ = true;
  return error;
}

absl::Status PrivacyLedger::RecordRelease(int64_t round, const std::string& name, const std::string& sha256) {
  if (!IsFieldValue(name) || !IsFieldValue(sha256)) {
    return absl::InvalidArgumentError("a release's name and digest must be non-empty without tabs, newlines or '='");
  }
  absl::MutexLock lock(&mu_);
  if (broken_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "privacy ledger ", path_, " had a failed write; reopen it before recording again"));
  }
  if (records_.count(round) == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("privacy ledger ", path_, ": release '", name, "' of round ", round, ", which is not charged"));
  }
  if (auto it = releases_.find(name); it != releases_.end()) {
    if (it->second == sha256) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "privacy ledger ", path_, " records the release '", name, "' with SHA-256 ", it->second, ", not ", sha256,
        ": its charge covers that release alone, and another would be released without being counted"));
  }
  RETURN_IF_ERROR(AppendLine(FormatLine(
      kReleaseTag, {{"round", absl::StrCat(round)}, {"name", name}, {"sha256", sha256}})));
  releases_[name] = sha256;
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
