#ifndef VFSYNTH_CLIENT_CORE_REPLY_JOURNAL_H_
#define VFSYNTH_CLIENT_CORE_REPLY_JOURNAL_H_

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "vfsynth/v1/checkpoint.pb.h"

namespace vfsynth {

// The party's journal of the replies it released since the curator's last durable
// checkpoint: an append-only file of length-prefixed, checksummed JournalEntry
// records. An entry with noise or a charge is fsync'ed BEFORE its reply is sent
// (Append); one the party could recompute identically from its committed state is
// only written (AppendUnsynced) and made durable by Sync() before that state is
// replaced (docs/operations.md, "The consistency rule"). A curator message the party has
// already answered (the curator resent it after a reconnect, or replays rounds after
// --resume) is answered from here with the identical bytes, so no noisy release is
// ever made twice (docs/privacy.md, "Restarts and replays").
class ReplyJournal {
 public:
  // How many bytes of dropped records the file may hold before DropBefore rewrites it.
  static constexpr size_t kCompactBytes = size_t{16} << 20;

  // Creates `path` or replays it. A torn last record (a crash mid-append; its reply
  // was never sent) is dropped and the file truncated; other damage is DATA_LOSS.
  static absl::StatusOr<std::unique_ptr<ReplyJournal>> Open(const std::string& path,
                                                            size_t compact_bytes = kCompactBytes);
  // Empties the journal (a fresh run).
  static absl::Status Remove(const std::string& path);
  ~ReplyJournal();

  // The entry answering the curator's (payload, round, step), or nullptr.
  const v1::JournalEntry* Find(int payload, int64_t round, int64_t step) const;
  // Appends and fsyncs; returns only once the entry is durable.
  absl::Status Append(const v1::JournalEntry& entry);
  // Appends without fsync: durable after the next Sync() (or a compaction).
  absl::Status AppendUnsynced(const v1::JournalEntry& entry);
  // Makes every appended entry durable. Safe to call from another thread than the
  // other methods (the party's background commit does).
  absl::Status Sync();
  // Forgets entries of rounds below `round` (the curator will never replay them). Their
  // records stay in the file (a reopen loads them again, harmless: they are never asked
  // for, and the next DropBefore forgets them) until the dropped records add up to
  // `compact_bytes`; then the file is rewritten atomically with the kept entries.
  // Rewriting it every round (a new file, two fsyncs and a rename, on the party's
  // critic step) cost a tenth of a round at VFLGAN's sizes (docs/performance.md).
  absl::Status DropBefore(int64_t round);
  size_t size() const { return entries_.size(); }

 private:
  using Key = std::tuple<int, int64_t, int64_t>;
  ReplyJournal(std::string path, int fd, size_t compact_bytes)
      : path_(std::move(path)), compact_bytes_(compact_bytes), fd_(fd) {}
  absl::Status Write(const v1::JournalEntry& entry, bool sync);

  std::string path_;
  const size_t compact_bytes_;
  size_t dropped_bytes_ = 0;  // records in the file of entries DropBefore forgot
  absl::Mutex mu_;            // the descriptor is swapped by DropBefore while Sync may run
  int fd_ ABSL_GUARDED_BY(mu_);
  bool unsynced_ ABSL_GUARDED_BY(mu_) = false;
  std::map<Key, v1::JournalEntry> entries_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_REPLY_JOURNAL_H_
