#ifndef VFSYNTH_COMMON_PRIVACY_PARTICIPATION_LEDGER_H_
#define VFSYNTH_COMMON_PRIVACY_PARTICIPATION_LEDGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/privacy/ledger_file.h"

namespace vfsynth::privacy {

// The tag of a ledger's header line: which kind of ledger a file is.
inline constexpr char kParticipationLedgerMagic[] = "vfsynth-participation-ledger";

struct ParticipationConfig {
  std::string run_id;                    // non-empty; no tabs, newlines or '='
  int64_t cap = 1;                       // t_r: rounds a user may answer, >= 1
  double epsilon_per_participation = 0;  // ε_r of one answer (pure ε-LDP), > 0
};

// The horizontal mode's per-user ledger, owned by the party that holds the users: how
// many rounds each user has answered. A user's guarantee is sequential composition over
// its answers, participations · ε_r <= cap · ε_r, against the curator and everyone.
//
// Protocol for callers: BindRound(round, question) and Take(round, user) BEFORE anything
// computed from the user's rows leaves the party; release only if both returned OK. A
// crash between the two over-counts (safe), and taking the same (round, user) again after
// a restart is a no-op, so a round may only ever be answered to one question: the same
// coins under another model would be a second answer charged as none.
// User keys are written to the file: pass a keyed digest of the user, not its raw value.
class ParticipationLedger;

// A participation ledger read for an audit (`vfsynth ledger show`).
struct ParticipationInspection {
  std::unique_ptr<ParticipationLedger> ledger;  // holding the records up to the first break
  absl::Status verification;  // OK, or that break, naming the file and line
  int64_t torn_bytes = 0;     // of a last line a crash left unfinished
};

class ParticipationLedger {
 public:
  // Creates `path` (with a new random ledger id) or replays it, as PrivacyLedger::Open
  // does (format version, run and configuration, checksums and the chain of lines, torn
  // last line, one process at a time).
  static absl::StatusOr<std::unique_ptr<ParticipationLedger>> Open(
      const std::string& path, const ParticipationConfig& config);
  // The same for a ledger that must exist already (a resumed run): NOT_FOUND otherwise.
  static absl::StatusOr<std::unique_ptr<ParticipationLedger>> OpenExisting(
      const std::string& path, const ParticipationConfig& config);

  // Reads `path` without locking or changing it, with the configuration its header
  // records; a ledger that does not verify is returned with `verification` saying where.
  static absl::StatusOr<ParticipationInspection> Inspect(const std::string& path);

  // Records, fsynced, that `user` answers `round`. OK without writing if it already did;
  // RESOURCE_EXHAUSTED (nothing written) if the user has answered `cap` rounds;
  // FAILED_PRECONDITION for a round before the user's last.
  absl::Status Take(int64_t round, const std::string& user);
  // Take for every user of `users` at once (one fsync): each checked as Take checks it and,
  // if any is refused, that error with nothing written; a user listed twice is refused.
  absl::Status TakeAll(int64_t round, const std::vector<std::string>& users);

  // Records, fsynced, that round `round` is answered to the question whose digest is
  // `question` (the broadcast model and the users asked). OK without writing if it is
  // recorded with the same digest; FAILED_PRECONDITION, writing nothing, with another.
  absl::Status BindRound(int64_t round, const std::string& question);

  // Rounds `user` has answered (0 for a user never taken).
  int64_t participations(const std::string& user) const;
  bool CanTake(const std::string& user) const { return participations(user) < config_.cap; }
  // The round of `user`'s latest answer (-1 for a user never taken).
  int64_t last_round(const std::string& user) const;
  // ε spent on `user`, and on the user with the most answers.
  double epsilon_spent(const std::string& user) const;
  double max_epsilon_spent() const;
  // Users with at least one answer.
  int64_t users() const;
  // Rounds bound to a question.
  int64_t rounds() const;
  const ParticipationConfig& config() const { return config_; }
  const std::string& path() const { return file_->path(); }
  // Drawn when the ledger is created and kept in its header: the party's kept state names
  // the ledger its answers were recorded on by it.
  const std::string& id() const { return id_; }
  // Records (takes and bound rounds) in the file: an older copy of it holds fewer.
  int64_t records() const;

 private:
  struct User {
    int64_t participations = 0;
    int64_t last_round = -1;
  };

  ParticipationLedger(ParticipationConfig config, std::unique_ptr<LedgerFile> file)
      : config_(std::move(config)), file_(std::move(file)) {}
  static absl::StatusOr<std::unique_ptr<ParticipationLedger>> OpenFile(
      const std::string& path, const ParticipationConfig& config, bool create);
  absl::Status Replay() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReplayRecord(const LedgerRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `user` answering `round` is a new record (false: it is recorded already), or
  // why it may not answer it.
  absl::StatusOr<bool> NeedsTake(int64_t round, const std::string& user) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ParticipationConfig config_;
  const std::unique_ptr<LedgerFile> file_;  // appended under mu_
  std::string id_;                          // set by OpenFile before the ledger is handed out
  mutable absl::Mutex mu_;
  std::map<std::string, User> users_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::string> questions_ ABSL_GUARDED_BY(mu_);  // round -> its digest
  int64_t most_ ABSL_GUARDED_BY(mu_) = 0;  // the largest participations of any user
  int64_t records_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_PARTICIPATION_LEDGER_H_
