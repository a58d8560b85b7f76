#include "client/core/party_ledger.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/privacy/accountant.h"
#include "common/privacy/run_accounting.h"

namespace vfsynth {
namespace {

// `planned` composed as the ledger composes it, amplified and at q = 1; relative slack
// for the summation order (the ledger composes charge by charge).
absl::Status SetPlannedBudgets(const std::vector<privacy::ChargedSteps>& planned,
                               privacy::LedgerConfig* config) {
  privacy::RdpAccountant amplified(config->sampler);
  privacy::RdpAccountant unamplified(config->sampler);
  for (const privacy::ChargedSteps& release : planned) {
    RETURN_IF_ERROR(amplified.Compose(release.mechanism, release.steps));
    RETURN_IF_ERROR(
        unamplified.Compose(privacy::WithoutAmplification(release.mechanism), release.steps));
  }
  constexpr double kSlack = 1 + 1e-6;
  ASSIGN_OR_RETURN(const privacy::EpsilonAndOrder all,
                   amplified.GetEpsilon(config->delta, config->conversion));
  ASSIGN_OR_RETURN(const privacy::EpsilonAndOrder exposed,
                   unamplified.GetEpsilon(config->delta, config->conversion));
  config->epsilon_budget = all.epsilon * kSlack;
  config->epsilon_budget_unamplified = exposed.epsilon * kSlack;
  return absl::OkStatus();
}

}  // namespace

absl::Status MissingLedgerOnResume(const absl::Status& status) {
  if (!absl::IsNotFound(status)) return status;
  return absl::FailedPreconditionError(
      absl::StrCat("--resume: ", status.message(),
                   ", but the run's releases were recorded on it: restore it, "
                   "or start a new run (another run_id) with a new ledger"));
}

absl::StatusOr<std::unique_ptr<privacy::PrivacyLedger>> OpenPartyLedger(
    const v1::PrivacyConfig& config, const std::string& run_id, privacy::Sampler sampler,
    privacy::Conversion conversion, const std::vector<privacy::ChargedSteps>& planned,
    bool resume) {
  privacy::LedgerConfig ledger_config;
  ledger_config.run_id = run_id;
  ledger_config.sampler = sampler;
  ledger_config.delta = config.delta();
  ledger_config.conversion = conversion;
  RETURN_IF_ERROR(SetPlannedBudgets(planned, &ledger_config));
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
