#include "client/core/reply_keeper.h"

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/privacy/mode_traits.h"
#include "common/privacy/run_accounting.h"

namespace vfsynth {

namespace {

// What the curator asked, independent of when it asked (durable_round changes).
std::string InputDigest(v1::CuratorMessage message) {
  message.clear_durable_round();
  return Sha256Hex(message.SerializeAsString());
}

v1::JournalEntry JournalEntryFor(const v1::CuratorMessage& message, const v1::PartyMessage& reply) {
  v1::JournalEntry entry;
  entry.set_round(message.round());
  entry.set_step(message.step());
  entry.set_payload(message.payload_case());
  entry.set_input_digest(InputDigest(message));
  entry.set_reply(reply.SerializeAsString());
  return entry;
}

}  // namespace

ReplyKeeper::ReplyKeeper(v1::PrivacyConfig::Mode mode, int n_critic,
                         std::unique_ptr<ReplyJournal> journal, BackgroundTask* committer)
    : mode_(mode), n_critic_(n_critic), journal_(std::move(journal)), committer_(committer) {}

absl::Status ReplyKeeper::BeforeMessage(int64_t durable_round) {
  RETURN_IF_ERROR(JournalSent());
  return journal_->DropBefore(durable_round);
}

absl::Status ReplyKeeper::JournalSent() {
  if (!unjournaled_.has_value()) return absl::OkStatus();
  const auto [message, reply] = *std::move(unjournaled_);
  unjournaled_.reset();
  // Never ahead of the state it was computed from: that commit was awaited before the
  // reply left (Keep).
  RETURN_IF_ERROR(journal_->AppendUnsynced(JournalEntryFor(message, reply)));
  auto sync = [journal = journal_.get()] { return journal->Sync(); };
  // The flush runs in the background while the curator works; the next commit starts
  // only after it (committer_ runs jobs in order).
  if (privacy::TraitsOf(mode_).draws_noise()) return committer_->Start(sync);
  // Mode none: the round's commit flushes the journal, and the slice gradient waits for
  // that commit. The round's last features are flushed now instead, off that path.
  if ((message.step() + 1) % n_critic_ == 0) return journal_flusher_.Start(sync);
  return absl::OkStatus();
}

absl::Status ReplyKeeper::BeforeCriticUpdate(int64_t durable_round) {
  // Recomputed generator-round replies are only reproducible from the critic of their
  // round. Once it changes, the curator can still ask for them again if its durable
  // checkpoint is not past their round (checkpoint_every > 1, or a curator crash now):
  // journal them; the commit of the changed critic flushes them before it is durable.
  for (const auto& [message, reply] : recomputed_) {
    if (message.round() >= durable_round)
      RETURN_IF_ERROR(journal_->AppendUnsynced(JournalEntryFor(message, reply)));
  }
  recomputed_.clear();
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::PartyMessage>> ReplyKeeper::Journaled(
    const v1::CuratorMessage& message) const {
  const v1::JournalEntry* entry =
      journal_->Find(message.payload_case(), message.round(), message.step());
  if (entry == nullptr) return std::nullopt;
  if (entry->input_digest() != InputDigest(message)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the curator sent round ", message.round(), ", step ", message.step(),
        " again with other inputs than before; refusing (its state does not match the run this "
        "party took part in: another checkpoint, or changed settings)"));
  }
  v1::PartyMessage reply;
  if (!reply.ParseFromString(entry->reply()))
    return absl::DataLossError("a journaled reply does not parse");
  return reply;
}

absl::Status ReplyKeeper::Keep(const v1::CuratorMessage& message, const v1::PartyMessage& reply) {
  switch (JournalingOf(message)) {
    case Journaling::kRecompute:
      // Mode none: the round's last update needs to be durable only before the curator
      // can leave the round (and stop resending it), i.e. before the slice gradient
      // leaves; the generator features are recomputed identically after a crash.
      if (privacy::TraitsOf(mode_).draws_noise() || message.has_generator_feature_gradient()) {
        RETURN_IF_ERROR(committer_->Await());
      }
      KeepRecomputed(message, reply);
      return absl::OkStatus();
    case Journaling::kBeforeSending:
      RETURN_IF_ERROR(
          journal_->Append(JournalEntryFor(message, reply)));  // durable before it is sent
      // So is the critic state it was computed from: its commit was written meanwhile. (A
      // crash between the two leaves a journaled reply ahead of the state; the curator's
      // resend re-applies that update, same inputs, before it asks again.)
      return committer_->Await();
    case Journaling::kBeforeReplacingState:
      // Sent once the state it was computed from is durable, and journaled only after it
      // is sent (JournalSent): until the next commit replaces that state the reply can be
      // recomputed to the same bytes, and nothing replaces it before the next message.
      RETURN_IF_ERROR(committer_->Await());
      unjournaled_.emplace(message, reply);
      return absl::OkStatus();
  }
  return absl::InternalError("unknown journaling rule");
}

absl::Status ReplyKeeper::Finish() {
  RETURN_IF_ERROR(JournalSent());
  return BeforeCommit();
}

ReplyKeeper::Journaling ReplyKeeper::JournalingOf(const v1::CuratorMessage& message) const {
  const bool noisy_features = privacy::TraitsOf(mode_).noises_features();
  if (message.has_critic_task()) {
    // Features with fresh noise (strict; the ensembles, whose shard critics also step
    // here): never twice, so durable before they leave. Without noise (none, dpsgd,
    // vflgan) they are a deterministic function of the committed critic state and the
    // step's counter-based batch, and the step's charge is idempotent: recomputing them
    // gives the same bytes at no new cost, for as long as that state is the committed one.
    return noisy_features ? Journaling::kBeforeSending : Journaling::kBeforeReplacingState;
  }
  // A generator-round reply without noise of its own (every mode but the ensemble
  // ones) is a deterministic function of the committed critic and the curator's
  // input, and post-processing of what the critic already paid for, and the critic
  // does not change until the next round: it is recomputed, never journaled.
  return privacy::IsEnsembleMode(mode_) ? Journaling::kBeforeSending : Journaling::kRecompute;
}

void ReplyKeeper::KeepRecomputed(const v1::CuratorMessage& message, const v1::PartyMessage& reply) {
  for (auto& [kept_message, kept_reply] : recomputed_) {
    if (kept_message.payload_case() == message.payload_case()) {
      kept_message = message;
      kept_reply = reply;
      return;
    }
  }
  recomputed_.emplace_back(message, reply);
}

}  // namespace vfsynth
