#ifndef VFSYNTH_CLIENT_CORE_PARTY_DURABILITY_H_
#define VFSYNTH_CLIENT_CORE_PARTY_DURABILITY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/base/background_task.h"
#include "vfsynth/v1/checkpoint.pb.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

class CheckpointSlots;
class PartyModel;
class ReplyKeeper;

// The one place that orders what a vertical party makes durable around a curator
// message: the ledger charge of a release, the reply journal (ReplyKeeper) and the
// committed critic state (docs/operations.md, "Failure handling"). Its calls keep the
// party's privacy invariants: nothing leaves before its charge and the state it was
// computed from are durable, and a question answered before is answered again with the
// identical bytes. The party calls, per message:
//   a question:         BeforeQuestion, then (unless answered before) StartCharge and the
//                       computation, then BeforeReplyLeaves;
//   feature gradients:  BeforeCriticUpdate, then (unless already applied) the update, then
//                       AfterCriticUpdate.
// State writes and journal flushes run in the background, in order, on one queue.
class PartyDurability {
 public:
  // The header a checkpoint of the critic state after `step` carries.
  using HeaderOf = std::function<v1::CheckpointHeader(int64_t step)>;

  // Opens the journal at `journal_path` for `model`'s critic, whose state is committed to
  // `state` (`committed_step`: the step it holds, -1 for none yet). `model` must outlive
  // this object.
  static absl::StatusOr<std::unique_ptr<PartyDurability>> Open(
      v1::PrivacyConfig::Mode mode, int n_critic, const std::string& journal_path,
      PartyModel* model, std::unique_ptr<CheckpointSlots> state, HeaderOf header_of,
      int64_t committed_step);
  ~PartyDurability();

  // The last critic update applied; durable too, except between the steps of a round in
  // mode none (AfterCriticUpdate).
  int64_t committed_step() const { return committed_step_; }
  size_t journaled() const;

  // A question (every round message but feature gradients): the reply sent to it before,
  // if any. First the reply last sent is journaled and entries of rounds the curator will
  // not ask again are dropped.
  absl::StatusOr<std::optional<v1::PartyMessage>> BeforeQuestion(const v1::CuratorMessage& message);
  // Runs the ledger charge of a reply about to be computed in the background, while it is
  // computed; BeforeReplyLeaves waits for it.
  absl::Status StartCharge(std::function<absl::Status()> charge);
  // The reply to `message`, computed now or (`answered_before`) from BeforeQuestion: returns
  // once it may leave. Its charge is durable, the state it came from is committed, and a
  // new reply is kept as its journaling rule says (ReplyKeeper::Keep).
  absl::Status BeforeReplyLeaves(const v1::CuratorMessage& message, const v1::PartyMessage& reply,
                                 bool answered_before);

  // Feature gradients: false if their step is already applied (the curator resent or
  // replays it). Otherwise the replies recomputable from the current critic are journaled
  // and the last commit's snapshot of it is taken, so the critic may change.
  absl::StatusOr<bool> BeforeCriticUpdate(const v1::CuratorMessage& message);
  // After the update of critic step `step`: commits the state (written in the background;
  // every reply and update waits for it). In mode none only a round's last update is
  // committed: every update is deterministic, so one lost in a crash is re-applied
  // identically from the round's resent messages.
  absl::Status AfterCriticUpdate(int64_t step);

  // Commits the critic state as after `step` in the background (-1: the initial state).
  absl::Status Commit(int64_t step);
  // Waits for the state write in flight.
  absl::Status AwaitCommit() { return committer_.Await(); }
  // Journals the reply BeforeReplyLeaves left for after its sending; runs before anything
  // else the party does next (PartyModel::PrepareAhead).
  absl::Status JournalSent();
  // The run's end: every sent reply journaled and the last state write landed.
  absl::Status Finish();

 private:
  PartyDurability(v1::PrivacyConfig::Mode mode, int n_critic, PartyModel* model,
                  std::unique_ptr<CheckpointSlots> state, HeaderOf header_of,
                  int64_t committed_step);

  const v1::PrivacyConfig::Mode mode_;
  const int n_critic_;
  PartyModel* const model_;
  const HeaderOf header_of_;
  int64_t committed_step_;
  std::unique_ptr<CheckpointSlots> state_;  // the committed critic state (written by committer_)
  std::unique_ptr<ReplyKeeper> replies_;    // the journal of what was sent
  BackgroundTask charger_;                  // the ledger charge of the reply being computed
  BackgroundTask
      committer_;  // the state write and journal flushes in flight; declared last: joined first
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_PARTY_DURABILITY_H_
