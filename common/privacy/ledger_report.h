#ifndef VFSYNTH_COMMON_PRIVACY_LEDGER_REPORT_H_
#define VFSYNTH_COMMON_PRIVACY_LEDGER_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vfsynth::privacy {

// What `vfsynth ledger show` prints about a party's ledger, and whether it verifies.
struct LedgerReport {
  std::string text;
  // OK when every line verifies (checksum, chain, recorded epsilons); otherwise the
  // first break, naming the file and the line. The text shows the records before it.
  absl::Status verification;
};

// Reads the privacy or participation ledger at `path` (its header says which) without
// locking or changing it. An error if it is neither, or of another format version.
absl::StatusOr<LedgerReport> ReportLedger(const std::string& path);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_LEDGER_REPORT_H_
