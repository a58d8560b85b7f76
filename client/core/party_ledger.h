#ifndef VFSYNTH_CLIENT_CORE_PARTY_LEDGER_H_
#define VFSYNTH_CLIENT_CORE_PARTY_LEDGER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/privacy/conversion.h"
#include "common/privacy/ensemble_accounting.h"
#include "common/privacy/ledger.h"
#include "common/privacy/rdp.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// A resumed party's ledger that could not be opened: a missing one (NOT_FOUND) is
// FAILED_PRECONDITION saying what to do, anything else `status` itself.
absl::Status MissingLedgerOnResume(const absl::Status& status);

// A party's privacy ledger (config.ledger) for run `run_id`, charged with `sampler`'s
// mechanisms. Its budgets are what `planned`, every charge the run's plan allows, spends
// in each of its views (amplified; no amplification, against the other parties): a
// curator asking for more than the plan cannot get it charged, whatever it asks for.
// Resuming, the ledger must exist: the run's checkpoint was charged to it. Starting
// afresh, it must hold no charges: the charges are idempotent per round, so releasing
// those rounds again would spend budget the ledger does not count. Either refusal is
// FAILED_PRECONDITION saying what to do.
absl::StatusOr<std::unique_ptr<privacy::PrivacyLedger>> OpenPartyLedger(
    const v1::PrivacyConfig& config, const std::string& run_id, privacy::Sampler sampler,
    privacy::Conversion conversion, const std::vector<privacy::ChargedSteps>& planned,
    bool resume);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_PARTY_LEDGER_H_
