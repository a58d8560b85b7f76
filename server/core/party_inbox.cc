#include "server/core/party_inbox.h"

#include <spdlog/spdlog.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace vfsynth {

PartyInbox::PartyInbox(const CuratorRun& run, PositionOf position_of)
    : run_(run), position_of_(std::move(position_of)), consumed_(run.roster.size()) {}

v1::CuratorMessage RunEnvelope(const CuratorRun& run, int64_t round, int64_t step) {
  v1::CuratorMessage message;
  message.set_run_id(run.config.run_id());
  message.set_round(round);
  message.set_step(step);
  message.set_durable_round(run.checkpoints.durable_round());
  return message;
}

absl::StatusOr<v1::PartyMessage> PartyInbox::Expect(int party,
                                                    v1::PartyMessage::PayloadCase expected,
                                                    int64_t round, int64_t step,
                                                    const CheckPayload& check,
                                                    absl::Duration work) {
  const v1::CuratorConfig& config = run_.config;
  const std::string& name = run_.roster[party];
  absl::Time deadline = absl::Now() + absl::Seconds(config.round_timeout_seconds()) + work;
  while (true) {
    absl::StatusOr<v1::PartyMessage> received =
        Timed(run_.profile, StepPhase::kWait, [&] { return run_.hub.Receive(party, deadline); });
    if (received.status().code() == absl::StatusCode::kUnavailable) {
      spdlog::warn("party {} disconnected; waiting up to {}s for it to rejoin", name,
                   config.reconnect_timeout_seconds());
      RETURN_IF_ERROR(run_.hub.AwaitReconnect(
          party, absl::Now() + absl::Seconds(config.reconnect_timeout_seconds())));
      deadline = absl::Now() + absl::Seconds(config.round_timeout_seconds()) + work;
      continue;
    }
    if (!received.ok()) return received.status();
    v1::PartyMessage message = std::move(*received);
    const std::optional<ReplyPosition> position = position_of_(message);
    if (position.has_value() && consumed_[party].has_value() && *position <= *consumed_[party] &&
        message.run_id() == config.run_id()) {
      // A rejoined party answering resent messages from its journal: already used.
      spdlog::debug("dropping {}'s repeated reply for round {}, step {}", name, message.round(),
                    message.step());
      continue;
    }
    if (message.has_error()) {
      return absl::AbortedError(
          absl::StrCat("party '", name, "' stopped: ", message.error().message()));
    }
    ScopedPhase validation(run_.profile, StepPhase::kCodec);
    absl::Status problem;
    if (message.run_id() != config.run_id()) {
      problem = absl::InvalidArgumentError(
          absl::StrCat("run id '", message.run_id(), "' is not this run"));
    } else if (message.payload_case() != expected || message.round() != round ||
               message.step() != step || !position.has_value()) {
      problem = absl::InvalidArgumentError(
          absl::StrCat("unexpected message (payload ", message.payload_case(), ", round ",
                       message.round(), ", step ", message.step(), "); expected payload ", expected,
                       " for round ", round, ", step ", step));
    } else {
      problem = check(message);
    }
    if (problem.ok()) {
      consumed_[party] = position;
      return message;
    }
    spdlog::warn("rejected a message from {}: {}", name, problem.ToString());
    v1::CuratorMessage reply = Envelope(round, step);
    reply.mutable_error()->set_code(static_cast<int>(problem.code()));
    reply.mutable_error()->set_message(std::string(problem.message()));
    run_.hub.Send(party, std::move(reply));
    // Receive returns queued messages even past the deadline; without this a party
    // that keeps its inbox full of bad messages would never time out.
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("party '", name, "' sent no valid message within the round timeout"));
    }
  }
}

}  // namespace vfsynth
