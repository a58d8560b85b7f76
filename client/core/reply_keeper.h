#ifndef VFSYNTH_CLIENT_CORE_REPLY_KEEPER_H_
#define VFSYNTH_CLIENT_CORE_REPLY_KEEPER_H_

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/core/reply_journal.h"
#include "common/base/background_task.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// How a party answers a question the curator asks again (after a crash, a rejoin, a
// resumed curator) with the bytes it sent the first time, never a second draw of fresh
// noise (docs/operations.md, "The consistency rule"). A reply is kept one of three ways:
// recomputed from the committed critic (no noise of its own, the critic unchanged since);
// journaled once sent, durable before the committed state it came from is replaced; or
// journaled durably before it is sent (fresh noise). Journal flushes run on the party's
// state-writing queue, so one always lands before the state write queued after it.
class ReplyKeeper {
 public:
  // `committer` writes the party's critic state; it must outlive the keeper's last call.
  ReplyKeeper(v1::PrivacyConfig::Mode mode, int n_critic, std::unique_ptr<ReplyJournal> journal,
              BackgroundTask* committer);

  size_t journaled() const { return journal_->size(); }
  // Before a round message: the last sent reply journaled, entries before the curator's
  // durable round dropped.
  absl::Status BeforeMessage(int64_t durable_round);
  // Journals the reply Keep left for after its sending; runs before anything else the
  // party does next (a message, PrepareAhead).
  absl::Status JournalSent();
  // Before the critic changes: journals the kept recomputable replies the curator may
  // still ask again (rounds from `durable_round` on).
  absl::Status BeforeCriticUpdate(int64_t durable_round);
  // The journaled reply to `message`, if it was answered before; FAILED_PRECONDITION if
  // it was asked then with other inputs.
  absl::StatusOr<std::optional<v1::PartyMessage>> Journaled(
      const v1::CuratorMessage& message) const;
  // A reply computed for the first time, kept as its rule says; returns once it may leave.
  absl::Status Keep(const v1::CuratorMessage& message, const v1::PartyMessage& reply);
  // Before the party queues a state write: the flush of a round's last features (mode
  // none) has landed.
  absl::Status BeforeCommit() { return journal_flusher_.Await(); }
  // Makes the journal's appends durable (a state write runs it before replacing the state).
  absl::Status Sync() { return journal_->Sync(); }
  // The run's end: every sent reply journaled and flushed.
  absl::Status Finish();

 private:
  enum class Journaling { kRecompute, kBeforeReplacingState, kBeforeSending };
  Journaling JournalingOf(const v1::CuratorMessage& message) const;
  // Keeps a recomputed reply (and its question) while the critic it came from is current.
  void KeepRecomputed(const v1::CuratorMessage& message, const v1::PartyMessage& reply);

  const v1::PrivacyConfig::Mode mode_;
  const int n_critic_;
  std::unique_ptr<ReplyJournal> journal_;
  BackgroundTask* const committer_;
  std::vector<std::pair<v1::CuratorMessage, v1::PartyMessage>> recomputed_;     // KeepRecomputed
  std::optional<std::pair<v1::CuratorMessage, v1::PartyMessage>> unjournaled_;  // JournalSent
  BackgroundTask
      journal_flusher_;  // mode none: the round's last features; declared last: joined first
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_REPLY_KEEPER_H_
