#include "client/core/party_ledger.h"

#include <spdlog/spdlog.h>

#include <limits>

#include "absl/strings/str_cat.h"

namespace vfsynth {

absl::Status MissingLedgerOnResume(const absl::Status& status) {
  if (!absl::IsNotFound(status)) return status;
  return absl::FailedPreconditionError(
      absl::StrCat("--resume: ", status.message(),
                   ", but the run's releases were recorded on it: restore it, "
                   "or start a new run (another run_id) with a new ledger"));
}

absl::StatusOr<std::unique_ptr<privacy::PrivacyLedger>> OpenPartyLedger(
    const v1::PrivacyConfig& config, const std::string& run_id, privacy::Sampler sampler,
    privacy::Conversion conversion, bool resume) {
  privacy::LedgerConfig ledger_config;
  ledger_config.run_id = run_id;
  ledger_config.sampler = sampler;
  ledger_config.delta = config.delta();
  ledger_config.conversion = conversion;
  ledger_config.epsilon_budget = config.has_epsilon() ? config.epsilon() * (1 + 1e-6)
                                                      : std::numeric_limits<double>::infinity();
  // Resuming, the ledger the checkpoint's releases were charged to must be there: a new
  // one would under-report them.
  absl::StatusOr<std::unique_ptr<privacy::PrivacyLedger>> ledger =
      resume ? privacy::PrivacyLedger::OpenExisting(config.ledger(), ledger_config)
             : privacy::PrivacyLedger::Open(config.ledger(), ledger_config);
  if (!ledger.ok()) return MissingLedgerOnResume(ledger.status());
  const privacy::PrivacySpent spent = (*ledger)->Spent();
  if (spent.rounds > 0) {
    // The charges are idempotent per key: a fresh start would draw and release again
    // what they already cover (its checkpoint directory, with the kept releases, is
    // gone) and charge nothing. Only a resume may reuse a charged ledger.
    if (!resume) {
      return absl::FailedPreconditionError(absl::StrCat(
          "privacy ledger ", config.ledger(), " already holds ", spent.rounds, " charges (epsilon ",
          absl::SixDigits(spent.epsilon), ") of run '", run_id,
          "' but this party starts afresh: releasing again under those charges would spend budget "
          "the ledger does not count. Pass --resume with the run's checkpoint directory, or start "
          "a new run (another run_id) with a new ledger"));
    }
    spdlog::info("ledger {}: {} steps already charged, epsilon {:.3f}", config.ledger(),
                 spent.steps, spent.epsilon);
  }
  return ledger;
}

}  // namespace vfsynth
