#ifndef VFSYNTH_COMMON_PRIVACY_LEDGER_H_
#define VFSYNTH_COMMON_PRIVACY_LEDGER_H_

// The party's own, append-only, fsync'ed privacy ledger. Format and recovery
// rules: docs/accounting.md, "Privacy ledger (party-owned)".
//
// Protocol for callers: Charge(round) BEFORE anything computed from round's
// batch leaves the party; release only if Charge returned OK. A crash between
// the two then over-counts (safe) and never under-counts, and re-charging the
// round after a restart is a no-op.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/privacy/accountant.h"
#include "common/privacy/conversion.h"
#include "common/privacy/ledger_file.h"
#include "common/privacy/rdp.h"

namespace vfsynth::privacy {

// The tag of a ledger's header line: which kind of ledger a file is.
inline constexpr char kPrivacyLedgerMagic[] = "vfsynth-privacy-ledger";

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

// A charge as the ledger holds it, with what the run had spent once it was made.
struct ChargeEntry {
  int64_t round = 0;
  int64_t steps = 0;
  StepMechanism mechanism;
  double epsilon = 0.0;              // amplified, after this charge
  double epsilon_unamplified = 0.0;  // no amplification, after this charge
};

// A kept release the ledger records under the charge of `round`.
struct ReleaseEntry {
  int64_t round = 0;
  std::string name;
  std::string sha256;
};

class PrivacyLedger;

// A ledger read for an audit (`vfsynth ledger show`), whatever run it belongs to.
struct LedgerInspection {
  std::unique_ptr<PrivacyLedger> ledger;  // holding the records up to the first break
  absl::Status verification;              // OK, or that break, naming the file and line
  int64_t torn_bytes = 0;                 // of a last line a crash left unfinished
};

class PrivacyLedger {
 public:
  // Creates `path` (writing its header with a new random ledger id) or replays
  // it: checks the header's format version and that it matches `config`, every
  // complete line's checksum and its link to the line before (LedgerFile), that
  // rounds increase, that every release record follows its charge and that the
  // epsilons each charge records are the ones its charges give. DATA_LOSS names
  // the file and the line. A torn last line (no trailing newline: a crash
  // mid-append) is dropped and the file truncated to its last complete line;
  // any other damage is DATA_LOSS. FAILED_PRECONDITION if the file has another
  // format version, belongs to another run/config or another process holds it
  // open.
  static absl::StatusOr<std::unique_ptr<PrivacyLedger>> Open(const std::string& path,
                                                             const LedgerConfig& config);
  // The same for a ledger that must exist already (a resumed run): a missing
  // file or one without a header is NOT_FOUND, never a new ledger.
  static absl::StatusOr<std::unique_ptr<PrivacyLedger>> OpenExisting(const std::string& path,
                                                                     const LedgerConfig& config);
  // Reads `path` without locking or changing it, with the configuration its header
  // records. An error if it is no privacy ledger of this format version; a ledger
  // that does not verify is returned with `verification` saying where it breaks.
  static absl::StatusOr<LedgerInspection> Inspect(const std::string& path);
  ~PrivacyLedger();
  PrivacyLedger(const PrivacyLedger&) = delete;
  PrivacyLedger& operator=(const PrivacyLedger&) = delete;

  // What Spent() would be after charging `steps` steps of `mechanism`.
  absl::StatusOr<PrivacySpent> SpentAfter(const StepMechanism& mechanism, int64_t steps = 1) const;
  // True iff charging them keeps both views within their budgets.
  absl::StatusOr<bool> CanCharge(const StepMechanism& mechanism, int64_t steps = 1) const;

  // Appends and fsyncs the charge for `round` (`steps` sampled batches, each
  // releasing `mechanism`). Idempotent: a round already charged with the same
  // parameters is OK and adds nothing; with different ones FAILED_PRECONDITION.
  // RESOURCE_EXHAUSTED (nothing written) if a budget would be exceeded;
  // FAILED_PRECONDITION for a round below the last charged one.
  absl::Status Charge(int64_t round, const StepMechanism& mechanism, int64_t steps = 1);

  // Records, appended and fsynced, that the kept release `name` (no tabs,
  // newlines or '='), whose SHA-256 is `sha256`, is the one the charge of
  // `round` covers: the caller records it before the release first leaves.
  // Idempotent for the same digest; FAILED_PRECONDITION if `round` is not
  // charged or `name` is recorded with another digest (a second draw would not
  // be covered).
  absl::Status RecordRelease(int64_t round, const std::string& name, const std::string& sha256);
  // The SHA-256 recorded for the release `name`, if any.
  std::optional<std::string> ReleaseDigest(const std::string& name) const;

  bool IsCharged(int64_t round) const;
  // Number of charged rounds; cheaper than Spent().rounds.
  int64_t charges() const;
  // Number of recorded releases.
  int64_t releases() const;
  // Every charge, by round, and every recorded release, in the order recorded.
  std::vector<ChargeEntry> ChargeHistory() const;
  std::vector<ReleaseEntry> Releases() const;
  PrivacySpent Spent() const;
  const LedgerConfig& config() const { return config_; }
  const std::string& path() const { return path_; }
  // Drawn at random when the ledger is created and kept in its header: a
  // checkpoint names the ledger its releases were charged to by it.
  const std::string& id() const { return id_; }

 private:
  PrivacyLedger(std::string path, LedgerConfig config, std::unique_ptr<LedgerFile> file);
  static absl::StatusOr<std::unique_ptr<PrivacyLedger>> OpenFile(const std::string& path,
                                                                 const LedgerConfig& config,
                                                                 bool create);
  absl::Status Replay() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReplayRecord(const LedgerRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReplayCharge(const LedgerRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReplayHeader();
  absl::Status Apply(const ChargeEntry& charge) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<PrivacySpent> SpentAfterLocked(const StepMechanism& mechanism, int64_t steps) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PrivacySpent SpentLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const LedgerConfig config_;
  const std::unique_ptr<LedgerFile> file_;  // appended under mu_
  std::string id_;                          // set by OpenFile before the ledger is handed out
  mutable absl::Mutex mu_;
  RdpAccountant amplified_ ABSL_GUARDED_BY(mu_);
  RdpAccountant unamplified_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, ChargeEntry> records_ ABSL_GUARDED_BY(mu_);
  std::vector<ReleaseEntry> release_order_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> releases_ ABSL_GUARDED_BY(mu_);  // name -> SHA-256
  int64_t steps_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_LEDGER_H_
