#include "client/core/party_durability.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/core/reply_journal.h"
#include "client/core/reply_keeper.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/checkpoint_slots.h"
#include "common/checkpoint/model_state.h"
#include "common/gan/party_model.h"
#include "common/privacy/mode_traits.h"

namespace vfsynth {

absl::StatusOr<std::unique_ptr<PartyDurability>> PartyDurability::Open(
    v1::PrivacyConfig::Mode mode, int n_critic, const std::string& journal_path, PartyModel* model,
    std::unique_ptr<CheckpointSlots> state, HeaderOf header_of, int64_t committed_step) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReplyJournal> journal, ReplyJournal::Open(journal_path));
  std::unique_ptr<PartyDurability> durability(new PartyDurability(
      mode, n_critic, model, std::move(state), std::move(header_of), committed_step));
  durability->replies_ =
      std::make_unique<ReplyKeeper>(mode, n_critic, std::move(journal), &durability->committer_);
  return durability;
}

PartyDurability::PartyDurability(v1::PrivacyConfig::Mode mode, int n_critic, PartyModel* model,
                                 std::unique_ptr<CheckpointSlots> state, HeaderOf header_of,
                                 int64_t committed_step)
    : mode_(mode),
      n_critic_(n_critic),
      model_(model),
      header_of_(std::move(header_of)),
      committed_step_(committed_step),
      state_(std::move(state)) {}

PartyDurability::~PartyDurability() = default;

size_t PartyDurability::journaled() const { return replies_->journaled(); }

absl::StatusOr<std::optional<v1::PartyMessage>> PartyDurability::BeforeQuestion(
    const v1::CuratorMessage& message) {
  RETURN_IF_ERROR(replies_->BeforeMessage(message.durable_round()));
  return replies_->Journaled(message);
}

absl::Status PartyDurability::StartCharge(std::function<absl::Status()> charge) {
  return charger_.Start(std::move(charge));
}

absl::Status PartyDurability::BeforeReplyLeaves(const v1::CuratorMessage& message,
                                                const v1::PartyMessage& reply,
                                                bool answered_before) {
  RETURN_IF_ERROR(charger_.Await());
  // Nothing leaves before the last critic update is durable, a resent reply included.
  if (answered_before) return committer_.Await();
  return replies_->Keep(message, reply);
}

absl::StatusOr<bool> PartyDurability::BeforeCriticUpdate(const v1::CuratorMessage& message) {
  RETURN_IF_ERROR(replies_->BeforeMessage(message.durable_round()));
  if (message.step() <= committed_step_) return false;
  RETURN_IF_ERROR(replies_->BeforeCriticUpdate(message.durable_round()));
  // The previous commit may still be reading the state (its snapshot).
  RETURN_IF_ERROR(committer_.Await());
  return true;
}

absl::Status PartyDurability::AfterCriticUpdate(int64_t step) {
  const bool last_of_round = (step + 1) % n_critic_ == 0;
  if (!privacy::TraitsOf(mode_).draws_noise() && !last_of_round) {
    committed_step_ = step;
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(replies_->BeforeCommit());
  // Durable before anything computed from the updated critic can leave (the write
  // completes before the next reply leaves: BeforeReplyLeaves awaits it).
  return Commit(step);
}

absl::Status PartyDurability::Commit(int64_t step) {
  // The snapshot too is taken in the background: nothing changes the critic state before
  // this job is done, since every update awaits committer_ first (BeforeCriticUpdate).
  RETURN_IF_ERROR(committer_.Start([this, header = header_of_(step), step]() -> absl::Status {
    const absl::Time start = absl::Now();
    ASSIGN_OR_RETURN(const std::string state, SavePartyState(*model_));
    const absl::Time snapshot = absl::Now();
    // Replies recomputable from the state being replaced are durable first.
    RETURN_IF_ERROR(replies_->Sync());
    RETURN_IF_ERROR(state_->Write(header, state));
    spdlog::debug("committed critic step {}: {} bytes, snapshot {:.1f} ms, write {:.1f} ms", step,
                  state.size(), absl::ToDoubleMilliseconds(snapshot - start),
                  absl::ToDoubleMilliseconds(absl::Now() - snapshot));
    return absl::OkStatus();
  }));
  committed_step_ = step;
  return absl::OkStatus();
}

absl::Status PartyDurability::JournalSent() { return replies_->JournalSent(); }

absl::Status PartyDurability::Finish() {
  RETURN_IF_ERROR(replies_->Finish());
  return committer_.Await();
}

}  // namespace vfsynth
