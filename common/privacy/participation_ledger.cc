#include "common/privacy/participation_ledger.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/random/secure_random.h"

namespace vfsynth::privacy {
namespace {

constexpr const char* kMagic = kParticipationLedgerMagic;
constexpr char kVersion[] = "3";
constexpr char kTakeTag[] = "take";
constexpr char kRoundTag[] = "round";

LedgerFieldList ConfigFields(const ParticipationConfig& config) {
  return {{"run_id", config.run_id},
          {"cap", absl::StrCat(config.cap)},
          {"epsilon_per_participation", ExactDouble(config.epsilon_per_participation)}};
}

absl::Status ValidateConfig(const ParticipationConfig& config) {
  if (!IsLedgerFieldValue(config.run_id)) {
    return absl::InvalidArgumentError(
        "ledger run id must be non-empty without tabs, newlines or '='");
  }
  if (config.cap < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("participation cap must be >= 1, got ", config.cap));
  if (!(config.epsilon_per_participation > 0) || !std::isfinite(config.epsilon_per_participation)) {
    return absl::InvalidArgumentError(
        absl::StrCat("epsilon per participation must be finite and > 0, got ",
                     config.epsilon_per_participation));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParticipationLedger>> ParticipationLedger::Open(
    const std::string& path, const ParticipationConfig& config) {
  return OpenFile(path, config, /*create=*/true);
}

absl::StatusOr<std::unique_ptr<ParticipationLedger>> ParticipationLedger::OpenExisting(
    const std::string& path, const ParticipationConfig& config) {
  return OpenFile(path, config, /*create=*/false);
}

absl::StatusOr<std::unique_ptr<ParticipationLedger>> ParticipationLedger::OpenFile(
    const std::string& path, const ParticipationConfig& config, bool create) {
  RETURN_IF_ERROR(ValidateConfig(config));
  ASSIGN_OR_RETURN(std::unique_ptr<LedgerFile> file,
                   LedgerFile::Open(path, create, "participation ledger"));
  std::unique_ptr<ParticipationLedger> ledger(new ParticipationLedger(config, std::move(file)));
  absl::MutexLock lock(&ledger->mu_);
  if (ledger->file_->lines().empty()) {
    ASSIGN_OR_RETURN(ledger->id_, NewHexSecret());
    LedgerFieldList header = {{"version", kVersion}, {"ledger_id", ledger->id_}};
    for (auto& field : ConfigFields(config)) header.push_back(std::move(field));
    RETURN_IF_ERROR(ledger->file_->WriteHeader(kMagic, header));
    return ledger;
  }
  RETURN_IF_ERROR(ledger->Replay());
  return ledger;
}

absl::StatusOr<ParticipationInspection> ParticipationLedger::Inspect(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<LedgerFile> file,
                   LedgerFile::OpenForReading(path, "participation ledger"));
  ASSIGN_OR_RETURN(const LedgerFields header, file->CheckHeader(kMagic, kVersion, {}));
  ParticipationConfig config;
  config.run_id = HeaderField(header, "run_id");
  ASSIGN_OR_RETURN(config.cap, LedgerIntField(header, "cap", 1));
  ASSIGN_OR_RETURN(config.epsilon_per_participation,
                   LedgerDoubleField(header, "epsilon_per_participation", 1));
  if (absl::Status valid = ValidateConfig(config); !valid.ok()) {
    return absl::DataLossError(absl::StrCat(file->name(), ": its header: ", valid.message()));
  }
  ParticipationInspection inspection;
  inspection.torn_bytes = file->torn_bytes();
  inspection.ledger.reset(new ParticipationLedger(config, std::move(file)));
  ParticipationLedger& ledger = *inspection.ledger;
  absl::MutexLock lock(&ledger.mu_);
  inspection.verification = ledger.Replay();
  return inspection;
}

absl::Status ParticipationLedger::Replay() {
  ASSIGN_OR_RETURN(const LedgerFields header,
                   file_->CheckHeader(kMagic, kVersion, ConfigFields(config_)));
  ASSIGN_OR_RETURN(id_, HeaderLedgerId(header, file_->name()));
  const LedgerBody body = file_->Body();
  for (const LedgerRecord& record : body.records) {
    if (absl::Status replayed = ReplayRecord(record); !replayed.ok()) {
      return absl::DataLossError(
          absl::StrCat(file_->name(), " line ", record.line_no, ": ", replayed.message()));
    }
  }
  RETURN_IF_ERROR(body.status);
  spdlog::info("participation ledger {}: replayed {} users, at most {} of {} participations each",
               file_->path(), users_.size(), most_, config_.cap);
  return absl::OkStatus();
}

absl::Status ParticipationLedger::ReplayRecord(const LedgerRecord& record) {
  ++records_;
  ASSIGN_OR_RETURN(const int64_t round, LedgerIntField(record.fields, "round", record.line_no));
  if (record.tag == kRoundTag) {
    ASSIGN_OR_RETURN(std::string question, LedgerField(record.fields, "question", record.line_no));
    if (!questions_.emplace(round, std::move(question)).second) {
      return absl::DataLossError(absl::StrCat("round ", round, " is bound twice"));
    }
    return absl::OkStatus();
  }
  if (record.tag != kTakeTag) {
    return absl::DataLossError(absl::StrCat("unknown record ", record.tag));
  }
  ASSIGN_OR_RETURN(const std::string key, LedgerField(record.fields, "user", record.line_no));
  User& user = users_[key];
  if (round <= user.last_round || user.participations >= config_.cap) {
    return absl::DataLossError(absl::StrCat("user ", key, " takes round ", round,
                                            " out of order or beyond its cap"));
  }
  ++user.participations;
  user.last_round = round;
  most_ = std::max(most_, user.participations);
  return absl::OkStatus();
}

absl::Status ParticipationLedger::Take(int64_t round, const std::string& user) {
  return TakeAll(round, {user});
}

absl::StatusOr<bool> ParticipationLedger::NeedsTake(int64_t round, const std::string& user) const {
  if (!IsLedgerFieldValue(user)) {
    return absl::InvalidArgumentError("a user key must be non-empty without tabs, newlines or '='");
  }
  auto it = users_.find(user);
  const User before = it == users_.end() ? User{} : it->second;
  if (round == before.last_round) return false;
  if (round < before.last_round) {
    return absl::FailedPreconditionError(absl::StrCat("user ", user, " answered round ",
                                                      before.last_round, " already, not ", round,
                                                      " after it"));
  }
  if (before.participations >= config_.cap) {
    return absl::ResourceExhaustedError(
        absl::StrCat("user ", user, " has answered its cap of ", config_.cap, " rounds (epsilon ",
                     config_.cap * config_.epsilon_per_participation, ")"));
  }
  return true;
}

absl::Status ParticipationLedger::TakeAll(int64_t round, const std::vector<std::string>& users) {
  if (round < 0) return absl::InvalidArgumentError(absl::StrCat("round must be >= 0, got ", round));
  absl::MutexLock lock(&mu_);
  std::vector<const std::string*> taken;
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& user : users) {
    if (!seen.insert(user).second) {
      return absl::InvalidArgumentError(absl::StrCat("user ", user, " is listed twice"));
    }
    ASSIGN_OR_RETURN(const bool needed, NeedsTake(round, user));
    if (needed) taken.push_back(&user);
  }
  std::vector<LedgerFieldList> lines;
  lines.reserve(taken.size());
  for (const std::string* user : taken)
    lines.push_back({{"round", absl::StrCat(round)}, {"user", *user}});
  RETURN_IF_ERROR(file_->AppendAll(kTakeTag, lines));
  for (const std::string* user : taken) {
    ++records_;
    User& after = users_[*user];
    ++after.participations;
    after.last_round = round;
    most_ = std::max(most_, after.participations);
  }
  return absl::OkStatus();
}

absl::Status ParticipationLedger::BindRound(int64_t round, const std::string& question) {
  if (!IsLedgerFieldValue(question)) {
    return absl::InvalidArgumentError(
        "a question digest must be non-empty without tabs, newlines or '='");
  }
  if (round < 0) return absl::InvalidArgumentError(absl::StrCat("round must be >= 0, got ", round));
  absl::MutexLock lock(&mu_);
  if (auto it = questions_.find(round); it != questions_.end()) {
    if (it->second == question) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "round ", round, " was answered to another question (digest ", it->second.substr(0, 16),
        ", now ", question.substr(0, 16),
        "): answering it again under another model would reveal what the users' answers "
        "hide, so it is refused"));
  }
  RETURN_IF_ERROR(
      file_->Append(kRoundTag, {{"round", absl::StrCat(round)}, {"question", question}}));
  ++records_;
  questions_.emplace(round, question);
  return absl::OkStatus();
}

int64_t ParticipationLedger::records() const {
  absl::MutexLock lock(&mu_);
  return records_;
}

int64_t ParticipationLedger::rounds() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(questions_.size());
}

int64_t ParticipationLedger::participations(const std::string& user) const {
  absl::MutexLock lock(&mu_);
  auto it = users_.find(user);
  return it == users_.end() ? 0 : it->second.participations;
}

int64_t ParticipationLedger::last_round(const std::string& user) const {
  absl::MutexLock lock(&mu_);
  auto it = users_.find(user);
  return it == users_.end() ? -1 : it->second.last_round;
}

double ParticipationLedger::epsilon_spent(const std::string& user) const {
  return static_cast<double>(participations(user)) * config_.epsilon_per_participation;
}

double ParticipationLedger::max_epsilon_spent() const {
  absl::MutexLock lock(&mu_);
  return static_cast<double>(most_) * config_.epsilon_per_participation;
}

int64_t ParticipationLedger::users() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(users_.size());
}

}  // namespace vfsynth::privacy
