#ifndef VFSYNTH_CLIENT_CORE_LEDGER_BINDING_H_
#define VFSYNTH_CLIENT_CORE_LEDGER_BINDING_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vfsynth {

// What a party keeps of the ledger its releases were recorded on: the ledger's id and
// how many records it held when the last release left. Resuming on another ledger, or on
// an older copy of the run's own (fewer records), would under-report what the releases
// spent and forget which question each round was answered to.
struct LedgerBinding {
  std::string ledger_id;
  int64_t records = 0;
  // A keyed digest of the secret the ledger's records are keyed with ("" where the
  // caller binds the secret elsewhere): under another secret a participation ledger's
  // users would all look new.
  std::string secret_digest;
};

// FAILED_PRECONDITION unless `ledger` (named `ledger_name`, "privacy ledger <path>") is
// the one `kept` (kept in `kept_where`, "checkpoint <path>") binds, with at least as many
// records (`counted`: what they are, "charges"), keyed with the same secret.
absl::Status CheckLedgerBinding(const LedgerBinding& kept, const std::string& kept_where,
                                const LedgerBinding& ledger, const std::string& ledger_name,
                                const std::string& counted);

// Keeps `binding` at `path` (one checksummed line with a format version), atomically and
// fsynced.
absl::Status KeepLedgerBinding(const std::string& path, const LedgerBinding& binding);
// The binding kept at `path`: NOT_FOUND if there is none, FAILED_PRECONDITION for another
// format version, DATA_LOSS if damaged.
absl::StatusOr<LedgerBinding> ReadLedgerBinding(const std::string& path);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_LEDGER_BINDING_H_
