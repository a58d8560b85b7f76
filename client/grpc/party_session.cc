#include "client/grpc/party_session.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/base/status_macros.h"
#include "common/net/tls.h"
#include "common/protocol/chunking.h"

namespace vfsynth {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr int kAlignTimeoutSeconds = 600;

absl::Status FromGrpc(const grpc::Status& status, const std::string& what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

std::chrono::system_clock::time_point In(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

void PartySession::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (active_ != nullptr) active_->TryCancel();
}

bool PartySession::Cancelled() {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool PartySession::BeginCall(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  active_ = context;
  return true;
}

bool PartySession::EndCall() {
  absl::MutexLock lock(&mu_);
  active_ = nullptr;
  return !cancelled_;
}

absl::Status PartySession::Call(grpc::ClientContext* context, double timeout_seconds, const std::string& what,
                                const std::function<grpc::Status()>& rpc) {
  context->set_deadline(In(timeout_seconds));
  if (!BeginCall(context)) return absl::CancelledError("party is shutting down");
  const grpc::Status status = rpc();
  if (!EndCall()) return absl::CancelledError("party is shutting down");
  return FromGrpc(status, what);
}

bool PartySession::Backoff(absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  auto cancelled = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return cancelled_; };
  mu_.AwaitWithTimeout(absl::Condition(&cancelled), delay);
  return !cancelled_;
}

absl::Status PartySession::Run() {
  absl::Time give_up = absl::Now() + absl::Seconds(config_.connect_timeout_seconds());
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
    if (!Backoff(absl::Seconds(1))) return absl::CancelledError("party is shutting down");
  }
}

absl::Status PartySession::Session(bool* streamed) {
  ASSIGN_OR_RETURN(auto credentials, MakeChannelCredentials(config_.tls(), config_.plaintext()));
  auto channel = grpc::CreateCustomChannel(config_.curator(), credentials,
                                           MakeChannelArguments(config_.max_message_bytes()));
  // Waited for in short slices, so that a signal ends the wait promptly.
  const absl::Time until = absl::Now() + absl::Seconds(config_.connect_timeout_seconds());
  while (!channel->WaitForConnected(In(1.0))) {
    if (Cancelled()) return absl::CancelledError("party is shutting down");
    if (absl::Now() >= until) {
      return absl::UnavailableError(absl::StrCat("cannot reach the curator at ", config_.curator(), " within ",
                                                 config_.connect_timeout_seconds(),
                                                 "s (is it running, and does its certificate match?)"));
    }
  }
  auto stub = v1::Curator::NewStub(channel);
  {
    grpc::ClientContext context;
    v1::RegisterResponse response;
    RETURN_IF_ERROR(Call(&context, config_.connect_timeout_seconds(), "Register",
                         [&] { return stub->Register(&context, core_->MakeRegisterRequest(), &response); }));
    RETURN_IF_ERROR(core_->AcceptRegistration(response));
    spdlog::info("registered for run '{}' with {} parties", response.run_id(), response.parties_size());
  }
  RETURN_IF_ERROR(Align(*stub));
  {
    grpc::ClientContext context;
    v1::AttestPlanResponse response;
    RETURN_IF_ERROR(Call(&context, kAlignTimeoutSeconds, "AttestPlan",
                         [&] { return stub->AttestPlan(&context, core_->MakeAttestPlanRequest(), &response); }));
    RETURN_IF_ERROR(core_->AcceptCuratorPlan(response));
  }
  if (core_->releases_label_pairs()) RETURN_IF_ERROR(ReleaseLabelPairs(*stub));
  return Serve(*stub, streamed);
}

absl::Status PartySession::Align(v1::Curator::Stub& stub) {
  ASSIGN_OR_RETURN(std::optional<v1::AlignRequest> request, core_->MakeAlignRequest());
  while (request.has_value()) {
    grpc::ClientContext context;
    v1::AlignResponse response;
    RETURN_IF_ERROR(Call(&context, kAlignTimeoutSeconds, absl::StrCat("Align hop ", request->hop()),
                         [&] { return stub.Align(&context, *request, &response); }));
    absl::StatusOr<std::optional<v1::AlignRequest>> next = core_->AnswerAlign(response);
    if (!next.ok()) {
      // This party's own final verdict (its budget, the curator's answer), not a lost connection.
      if (next.status().code() != absl::StatusCode::kUnavailable) Refuse(stub, next.status());
      return next.status();
    }
    request = *std::move(next);
  }
  return absl::OkStatus();
}

void PartySession::Refuse(v1::Curator::Stub& stub, const absl::Status& reason) {
  grpc::ClientContext context;
  v1::AttestPlanResponse response;
  const absl::Status told = Call(&context, config_.connect_timeout_seconds(), "AttestPlan",
                                 [&] { return stub.AttestPlan(&context, core_->MakeRefusal(reason), &response); });
  // The curator answers a refusal by failing the run (FAILED_PRECONDITION).
  if (told.code() != absl::StatusCode::kFailedPrecondition) {
    spdlog::warn("could not tell the curator this party refuses the run: {}", told.ToString());
  }
}

absl::Status PartySession::ReleaseLabelPairs(v1::Curator::Stub& stub) {
  ASSIGN_OR_RETURN(const v1::ShareLabelsRequest request, core_->MakeShareLabelsRequest());
  v1::ShareLabelsResponse labels;
  {
    grpc::ClientContext context;
    RETURN_IF_ERROR(Call(&context, kAlignTimeoutSeconds, "ShareLabels",
                         [&] { return stub.ShareLabels(&context, request, &labels); }));
  }
  ASSIGN_OR_RETURN(const std::optional<v1::LabelPairsRequest> tables, core_->MakeLabelPairsRequest(labels));
  if (!tables.has_value()) return absl::OkStatus();
  grpc::ClientContext context;
  v1::LabelPairsResponse response;
  return Call(&context, config_.connect_timeout_seconds(), "ReleaseLabelPairs",
              [&] { return stub.ReleaseLabelPairs(&context, *tables, &response); });
}

absl::Status PartySession::Serve(v1::Curator::Stub& stub, bool* streamed) {
  grpc::ClientContext context;
  if (!BeginCall(&context)) return absl::CancelledError("party is shutting down");
  auto stream = stub.Train(&context);
  absl::Status result = absl::OkStatus();
  uint64_t next_id = 0;
  auto write = [&](const v1::PartyMessage& message) {
    return WriteChunked(message, kChunkBytes, next_id++,
                        [&](const v1::PartyMessage& piece) { return stream->Write(piece); });
  };
  ChunkAssembler<v1::CuratorMessage> assembler(config_.max_message_bytes());
  if (!write(core_->MakeHello())) result = absl::UnavailableError("curator closed the stream at Hello");
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
    if (!failed.ok()) {
      // Tell the curator why this party stops, then stop.
      v1::PartyMessage error;
      error.mutable_error()->set_code(static_cast<int>(failed.code()));
      error.mutable_error()->set_message(std::string(failed.message()));
      write(error);
      result = failed;
      break;
    }
  }
  stream->WritesDone();
  const grpc::Status finish = stream->Finish();
  const bool live = EndCall();
  if (!result.ok()) return result;
  if (core_->finished()) {
    if (!core_->finish_succeeded()) {
      return absl::AbortedError(absl::StrCat("curator ended the run: ", core_->finish_message()));
    }
    return absl::OkStatus();
  }
  if (!live) return absl::CancelledError("party is shutting down");
  const absl::Status ended = FromGrpc(finish, "Train stream");
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
