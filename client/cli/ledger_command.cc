// `vfsynth ledger show FILE`: a party's ledger as an auditor reads it.
#include <cstdio>
#include <string>
#include <vector>

#include "client/cli/command_registry.h"
#include "common/base/status_macros.h"
#include "common/privacy/ledger_report.h"

namespace vfsynth {
namespace {

// Prints the report; a ledger that does not verify is the command's error (exit 1).
absl::Status RunLedgerCommand(const std::vector<std::string>& args) {
  if (args.size() != 2 || args[0] != "show") {
    return absl::InvalidArgumentError("usage: vfsynth ledger show FILE");
  }
  ASSIGN_OR_RETURN(const privacy::LedgerReport report, privacy::ReportLedger(args[1]));
  std::printf("%s", report.text.c_str());
  std::fflush(stdout);
  return report.verification;
}

const CommandRegistration kLedger(
    "ledger",
    {"ledger show FILE   (a party's privacy or participation ledger: its run, each charge, the "
     "totals per observer at the run's delta, and whether every line verifies; exits 1 if not)",
     &RunLedgerCommand});

}  // namespace
}  // namespace vfsynth
