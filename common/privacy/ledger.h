#ifndef VFSYNTH_COMMON_PRIVACY_LEDGER_H_
#define VFSYNTH_COMMON_PRIVACY_LEDGER_H_

// The party's own, append-only, fsync'ed privacy ledger. Format and recovery
// rules: docs/privacy.md, "Privacy ledger".
//
// Protocol for callers: Charge(round) BEFORE anything computed from round's
// batch leaves the party; release only if Charge returned OK. A crash between
// the two then over-counts (safe) and never under-counts, and re-charging the
// round after a restart is a no-op.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/privacy/accountant.h"
#include "common/privacy/conversion.h"
#include "common/privacy/rdp.h"

namespace vfsynth::privacy {

struct LedgerConfig {
  std::string run_id;  // non-empty; no tabs, newlines or '='
  Sampler sampler = Sampler::kWithoutReplacement;
  Conversion conversion = Conversion::kImproved;
  double delta = 1e-5;
  // Enforced on the amplified view (against the curator and outsiders).
  double epsilon_budget = 0.0;
  // Enforced on the view of other parties, who know the sampled indices
  // (q = 1); +inf = report only.
  double epsilon_budget_unamplified = std::numeric_limits<double>::infinity();
};

struct PrivacySpent {
  double epsilon = 0.0;  // amplified by subsampling: curator and outsiders
  double order = 0.0;
  double epsilon_unamplified = 0.0;  // no amplification (q = 1): other parties
  double order_unamplified = 0.0;
  int64_t rounds = 0;       // charged rounds
  int64_t steps = 0;        // sampled steps over all charged rounds
  int64_t last_round = -1;  // -1: nothing charged yet
};

class PrivacyLedger {
 public:
  // Creates `path` (writing its header) or replays it: checks the header
  // matches `config`, every complete line's checksum and that rounds increase.
  // A torn last line (no trailing newline: a crash mid-append) is dropped and
  // the file truncated to its last complete line; any other damage is
  // DATA_LOSS. FAILED_PRECONDITION if the file belongs to another run/config
  // or another process holds it open.
  static absl::StatusOr<std::unique_ptr<PrivacyLedger>> Open(const std::string& path,
                                                             const LedgerConfig& config);
  ~PrivacyLedger();
  PrivacyLedger(const PrivacyLedger&) = delete;
  PrivacyLedger& operator=(const PrivacyLedger&) = delete;

  // What Spent() would be after charging `steps` steps of `mechanism`.
  absl::StatusOr<PrivacySpent> SpentAfter(const StepMechanism& mechanism,
                                          int64_t steps = 1) const;
  // True iff charging them keeps both views within their budgets.
  absl::StatusOr<bool> CanCharge(const StepMechanism& mechanism, int64_t steps = 1) const;

  // Appends and fsyncs the charge for `round` (`steps` sampled batches, each
  // releasing `mechanism`). Idempotent: a round already charged with the same
  // parameters is OK and adds nothing; with different ones FAILED_PRECONDITION.
  // RESOURCE_EXHAUSTED (nothing written) if a budget would be exceeded;
  // FAILED_PRECONDITION for a round below the last charged one.
  absl::Status Charge(int64_t round, const StepMechanism& mechanism, int64_t steps = 1);

  bool IsCharged(int64_t round) const;
  PrivacySpent Spent() const;
  const LedgerConfig& config() const { return config_; }
  const std::string& path() const { return path_; }

 private:
  struct Record {
    int64_t round = 0;
    int64_t steps = 0;
    StepMechanism mechanism;
  };

  PrivacyLedger(std::string path, LedgerConfig config, int fd);
  absl::Status Replay(const std::string& contents);
  absl::Status Apply(const Record& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<PrivacySpent> SpentAfterLocked(const StepMechanism& mechanism,
                                                int64_t steps) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PrivacySpent SpentLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AppendLine(const std::string& line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const LedgerConfig config_;
  const int fd_;
  mutable absl::Mutex mu_;
  int64_t file_size_ ABSL_GUARDED_BY(mu_) = 0;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;  // a failed append left the file uncertain
  RdpAccountant amplified_ ABSL_GUARDED_BY(mu_);
  RdpAccountant unamplified_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, Record> records_ ABSL_GUARDED_BY(mu_);
  int64_t steps_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_LEDGER_H_
