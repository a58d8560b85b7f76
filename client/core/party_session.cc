#include "client/core/party_session.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/protocol/chunking.h"

namespace vfsynth {
namespace {

// Alignment and plan attestation wait for every party.
constexpr absl::Duration kAlignTimeout = absl::Seconds(600);

}  // namespace

void PartySession::Cancel() {
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  link_->Cancel();
  core_->Cancel();
}

bool PartySession::Cancelled() {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool PartySession::Backoff(absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  auto cancelled = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return cancelled_; };
  mu_.AwaitWithTimeout(absl::Condition(&cancelled), delay);
  return !cancelled_;
}

absl::Status PartySession::Run() {
  absl::Time give_up = absl::Now() + connect_timeout();
  while (true) {
    bool streamed = false;
    const absl::Status status = Session(&streamed);
    // Connection trouble is UNAVAILABLE; everything else (a refusal, the run's end) is final.
    if (status.code() != absl::StatusCode::kUnavailable) return status;
    if (streamed) give_up = absl::Now() + absl::Seconds(config_.reconnect_timeout_seconds());
    if (absl::Now() >= give_up) {
      return absl::UnavailableError(absl::StrCat(status.message(), "; gave up reconnecting"));
    }
    spdlog::warn("{}; redialling the curator until {}", std::string(status.message()),
                 absl::FormatTime("%H:%M:%S", give_up, absl::LocalTimeZone()));
    if (!Backoff(absl::Seconds(1))) return PartyShuttingDown();
  }
}

absl::Status PartySession::Session(bool* streamed) {
  RETURN_IF_ERROR(link_->Connect(connect_timeout()));
  ASSIGN_OR_RETURN(const v1::RegisterResponse registered,
                   link_->Register(core_->MakeRegisterRequest(), connect_timeout()));
  RETURN_IF_ERROR(RefuseOnError(core_->AcceptRegistration(registered)));
  spdlog::info("registered for run '{}' with {} parties", registered.run_id(),
               registered.parties_size());
  RETURN_IF_ERROR(Align());
  ASSIGN_OR_RETURN(const v1::AttestPlanResponse plan,
                   link_->AttestPlan(core_->MakeAttestPlanRequest(), kAlignTimeout));
  RETURN_IF_ERROR(RefuseOnError(core_->AcceptCuratorPlan(plan)));
  if (core_->releases_label_pairs()) RETURN_IF_ERROR(ReleaseLabelPairs());
  ASSIGN_OR_RETURN(const std::optional<v1::MarginalsRequest> marginals,
                   RefuseOnError(core_->MakeMarginalsRequest()));
  if (marginals.has_value())
    RETURN_IF_ERROR(link_->ReleaseMarginals(*marginals, connect_timeout()).status());
  return Serve(streamed);
}

absl::Status PartySession::Align() {
  ASSIGN_OR_RETURN(std::optional<v1::AlignRequest> request,
                   RefuseOnError(core_->MakeAlignRequest()));
  while (request.has_value()) {
    ASSIGN_OR_RETURN(const v1::AlignResponse response, link_->Align(*request, kAlignTimeout));
    ASSIGN_OR_RETURN(request, RefuseOnError(core_->AnswerAlign(response)));
  }
  return absl::OkStatus();
}

absl::Status PartySession::RefuseOnError(absl::Status status) {
  // This party's own final verdict (its budget, a write its ledger or state refused, the
  // curator's answer), not a lost connection or a shutdown: the run fails at once for every
  // party instead of waiting for this one until the join timeout.
  if (!status.ok() && status.code() != absl::StatusCode::kUnavailable && !Cancelled()) {
    Refuse(status);
  }
  return status;
}

void PartySession::Refuse(const absl::Status& reason) {
  const absl::Status told =
      link_->AttestPlan(core_->MakeRefusal(reason), connect_timeout()).status();
  // The curator answers a refusal by failing the run (FAILED_PRECONDITION).
  if (told.code() != absl::StatusCode::kFailedPrecondition) {
    spdlog::warn("could not tell the curator this party refuses the run: {}", told.ToString());
  }
}

absl::Status PartySession::ReleaseLabelPairs() {
  ASSIGN_OR_RETURN(const v1::ShareLabelsRequest request,
                   RefuseOnError(core_->MakeShareLabelsRequest()));
  ASSIGN_OR_RETURN(const v1::ShareLabelsResponse labels,
                   link_->ShareLabels(request, kAlignTimeout));
  ASSIGN_OR_RETURN(const std::optional<v1::LabelPairsRequest> tables,
                   RefuseOnError(core_->MakeLabelPairsRequest(labels)));
  if (!tables.has_value()) return absl::OkStatus();
  return link_->ReleaseLabelPairs(*tables, connect_timeout()).status();
}

absl::Status PartySession::Serve(bool* streamed) {
  ASSIGN_OR_RETURN(std::unique_ptr<TrainStream> stream, link_->OpenTrain());
  absl::Status result = absl::OkStatus();
  uint64_t next_id = 0;
  auto write = [&](const v1::PartyMessage& message) {
    return WriteChunked(message, kChunkBytes, next_id++,
                        [&](const v1::PartyMessage& piece) { return stream->Write(piece); });
  };
  ChunkAssembler<v1::CuratorMessage> assembler(config_.max_message_bytes());
  if (!write(core_->MakeHello()))
    result = absl::UnavailableError("curator closed the stream at Hello");
  v1::CuratorMessage message;
  while (result.ok() && !core_->finished() && stream->Read(&message)) {
    *streamed = true;
    auto whole = assembler.Add(std::move(message));
    if (!whole.ok()) {
      result = whole.status();
      break;
    }
    if (!whole->has_value()) continue;
    auto replies = core_->Handle(**whole);
    // Once the replies are out, the work of the next message that does not need it.
    absl::Status failed = replies.ok() ? absl::OkStatus() : replies.status();
    if (failed.ok()) {
      for (const v1::PartyMessage& reply : *replies) {
        if (!write(reply)) {
          result = absl::UnavailableError("curator closed the stream");
          break;
        }
      }
      if (result.ok()) failed = core_->PrepareAhead();
    }
    if (!failed.ok() && Cancelled()) {
      // Shutting down stopped the work: not the run's error (the party may resume).
      result = PartyShuttingDown();
      break;
    }
    if (!failed.ok()) {
      // Tell the curator why this party stops, then stop.
      v1::PartyMessage error;
      error.mutable_error()->set_code(static_cast<int>(failed.code()));
      error.mutable_error()->set_message(WithoutLocalPaths(failed.message()));
      write(error);
      result = failed;
      break;
    }
  }
  const absl::Status ended = stream->Finish();
  if (!result.ok()) return result;
  if (core_->finished()) {
    if (!core_->finish_succeeded()) {
      return absl::AbortedError(absl::StrCat("curator ended the run: ", core_->finish_message()));
    }
    return absl::OkStatus();
  }
  if (Cancelled()) return PartyShuttingDown();
  switch (ended.code()) {
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kInvalidArgument:
      return ended;  // a refusal, not a lost connection
    default:
      // The curator went away (or still holds this party's previous stream): redial.
      if (ended.ok() || ended.code() == absl::StatusCode::kCancelled) {
        return absl::UnavailableError(
            "the curator ended the Train stream before the run finished (stopped or restarting)");
      }
      return absl::UnavailableError(std::string(ended.message()));
  }
}

}  // namespace vfsynth
