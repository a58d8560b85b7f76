#include "common/privacy/ledger_report.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/privacy/ledger.h"
#include "common/privacy/ledger_file.h"
#include "common/privacy/participation_ledger.h"

namespace vfsynth::privacy {
namespace {

std::string Number(double value) { return absl::StrFormat("%.6g", value); }

std::string Numbers(const std::vector<double>& values) {
  std::vector<std::string> text;
  for (double value : values) text.push_back(Number(value));
  return absl::StrJoin(text, ",");
}

// The end of every report: the verdict, and what a torn last line means.
void AppendVerdict(const absl::Status& verification, int64_t torn_bytes, std::string* text) {
  if (torn_bytes > 0) {
    absl::StrAppend(text, "a torn last line (", torn_bytes,
                    " bytes, a crash mid-append) is not counted: nothing left under it\n");
  }
  if (verification.ok()) {
    absl::StrAppend(text,
                    "verified: every line's checksum and its link to the line before, and "
                    "every recorded epsilon\n");
  } else {
    absl::StrAppend(text, "NOT VERIFIED (the records above are those before the break): ",
                    verification.message(), "\n");
  }
}

absl::StatusOr<LedgerReport> ReportPrivacyLedger(const std::string& path) {
  ASSIGN_OR_RETURN(LedgerInspection inspection, PrivacyLedger::Inspect(path));
  const PrivacyLedger& ledger = *inspection.ledger;
  const LedgerConfig& config = ledger.config();
  LedgerReport report;
  std::string& text = report.text;
  absl::StrAppend(&text, "privacy ledger ", path, "\n  run ", config.run_id, ", ledger id ",
                  ledger.id(), "\n  sampler ", SamplerName(config.sampler), ", conversion ",
                  ConversionName(config.conversion), ", delta ", Number(config.delta), "\n");
  absl::StrAppend(&text,
                  "charges (epsilon after each: against the curator and outsiders / against "
                  "the other parties):\n");
  for (const ChargeEntry& charge : ledger.ChargeHistory()) {
    absl::StrAppend(&text, "  round ", charge.round, "  steps ", charge.steps, "  q ",
                    Number(charge.mechanism.sample_rate), "  z ",
                    Numbers(charge.mechanism.noise_multipliers));
    if (!charge.mechanism.randomized_responses.empty())
      absl::StrAppend(&text, "  rr ", Numbers(charge.mechanism.randomized_responses));
    absl::StrAppend(&text, "  -> epsilon ", Number(charge.epsilon), " / ",
                    Number(charge.epsilon_unamplified), "\n");
  }
  const std::vector<ReleaseEntry> releases = ledger.Releases();
  if (!releases.empty()) absl::StrAppend(&text, "releases (kept, covered by the charge of):\n");
  for (const ReleaseEntry& release : releases) {
    absl::StrAppend(&text, "  round ", release.round, "  ", release.name, "  sha256 ",
                    release.sha256, "\n");
  }
  const PrivacySpent spent = ledger.Spent();
  absl::StrAppend(&text, "totals at delta ", Number(config.delta), " over ", spent.rounds,
                  " charges (", spent.steps, " steps):\n  against the curator and outsiders: ",
                  "epsilon ", Number(spent.epsilon), " of budget ", Number(config.epsilon_budget),
                  "\n  against the other parties (no amplification): epsilon ",
                  Number(spent.epsilon_unamplified), " of budget ",
                  Number(config.epsilon_budget_unamplified), "\n");
  AppendVerdict(inspection.verification, inspection.torn_bytes, &text);
  report.verification = inspection.verification;
  return report;
}

absl::StatusOr<LedgerReport> ReportParticipationLedger(const std::string& path) {
  ASSIGN_OR_RETURN(ParticipationInspection inspection, ParticipationLedger::Inspect(path));
  const ParticipationLedger& ledger = *inspection.ledger;
  const ParticipationConfig& config = ledger.config();
  LedgerReport report;
  std::string& text = report.text;
  absl::StrAppend(&text, "participation ledger ", path, "\n  run ", config.run_id,
                  ", ledger id ", ledger.id(), "\n  at most ", config.cap,
                  " answers per user, epsilon ", Number(config.epsilon_per_participation),
                  " each (local, pure)\n");
  absl::StrAppend(&text, "rounds answered: ", ledger.rounds(), "\nusers who answered: ",
                  ledger.users(), "\ntotal against every observer: epsilon ",
                  Number(ledger.max_epsilon_spent()), " for the user with the most answers, of ",
                  Number(config.cap * config.epsilon_per_participation), "\n");
  AppendVerdict(inspection.verification, inspection.torn_bytes, &text);
  report.verification = inspection.verification;
  return report;
}

}  // namespace

absl::StatusOr<LedgerReport> ReportLedger(const std::string& path) {
  ASSIGN_OR_RETURN(const std::unique_ptr<LedgerFile> file,
                   LedgerFile::OpenForReading(path, "ledger"));
  ASSIGN_OR_RETURN(const auto header, ParseLedgerLine(file->lines()[0], 1));
  if (header.first == kPrivacyLedgerMagic) return ReportPrivacyLedger(path);
  if (header.first == kParticipationLedgerMagic) return ReportParticipationLedger(path);
  return absl::InvalidArgumentError(
      absl::StrCat(path, " is neither a privacy ledger nor a participation ledger"));
}

}  // namespace vfsynth::privacy
