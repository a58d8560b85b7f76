#include "client/grpc/grpc_curator_link.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/net/grpc_status.h"
#include "common/net/tls.h"

namespace vfsynth {
// The Train stream on its own context, which stays the link's active call until Finish.
class GrpcCuratorLink::Stream final : public TrainStream {
 public:
  explicit Stream(GrpcCuratorLink* link) : link_(link) {}
  ~Stream() override {
    if (stream_ != nullptr) Finish().IgnoreError();
  }

  // False if the link is cancelled.
  bool Open(v1::Curator::Stub& stub) {
    if (!link_->BeginCall(&context_)) return false;
    stream_ = stub.Train(&context_);
    return true;
  }
  bool Write(const v1::PartyMessage& piece) override { return stream_->Write(piece); }
  bool Read(v1::CuratorMessage* piece) override { return stream_->Read(piece); }
  absl::Status Finish() override {
    stream_->WritesDone();
    // A party that stops on an error leaves messages unread (the curator's Finished, say);
    // gRPC's Finish waits for them to be read, so they are drained, unused.
    v1::CuratorMessage unread;
    while (stream_->Read(&unread)) {
    }
    const grpc::Status finished = stream_->Finish();
    stream_.reset();
    link_->EndCall();
    return FromGrpcStatus(finished, "Train stream");
  }

 private:
  GrpcCuratorLink* link_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::PartyMessage, v1::CuratorMessage>> stream_;
};

void GrpcCuratorLink::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (active_ != nullptr) active_->TryCancel();
}

bool GrpcCuratorLink::Cancelled() {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool GrpcCuratorLink::BeginCall(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  active_ = context;
  return true;
}

bool GrpcCuratorLink::EndCall() {
  absl::MutexLock lock(&mu_);
  active_ = nullptr;
  return !cancelled_;
}

absl::Status GrpcCuratorLink::Connect(absl::Duration timeout) {
  ASSIGN_OR_RETURN(auto credentials, MakeChannelCredentials(config_.curator(), config_.tls(), config_.plaintext()));
  auto channel = grpc::CreateCustomChannel(config_.curator(), credentials,
                                           MakeChannelArguments(config_.max_message_bytes()));
  // Waited for in short slices, so that Cancel() ends the wait promptly.
  const absl::Time until = absl::Now() + timeout;
  while (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(1)))) {
    if (Cancelled()) return PartyShuttingDown();
    if (absl::Now() >= until) {
      return absl::UnavailableError(absl::StrCat(
          "cannot reach the curator at ", config_.curator(), " within ",
          absl::ToDoubleSeconds(timeout), "s (is it running, and does its certificate match?)"));
    }
  }
  stub_ = v1::Curator::NewStub(channel);
  return absl::OkStatus();
}

template <typename Response>
absl::StatusOr<Response> GrpcCuratorLink::Call(
    const std::string& what, absl::Duration timeout,
    const std::function<grpc::Status(grpc::ClientContext*, Response*)>& rpc) {
  if (stub_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(what, " before Connect"));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!BeginCall(&context)) return PartyShuttingDown();
  Response response;
  const grpc::Status status = rpc(&context, &response);
  if (!EndCall()) return PartyShuttingDown();
  RETURN_IF_ERROR(FromGrpcStatus(status, what));
  return response;
}

absl::StatusOr<v1::RegisterResponse> GrpcCuratorLink::Register(const v1::RegisterRequest& request,
                                                               absl::Duration timeout) {
  return Call<v1::RegisterResponse>("Register", timeout,
                                    [&](grpc::ClientContext* context, auto* response) {
                                      return stub_->Register(context, request, response);
                                    });
}

absl::StatusOr<v1::AlignResponse> GrpcCuratorLink::Align(const v1::AlignRequest& request,
                                                         absl::Duration timeout) {
  return Call<v1::AlignResponse>(absl::StrCat("Align hop ", request.hop()), timeout,
                                 [&](grpc::ClientContext* context, auto* response) {
                                   return stub_->Align(context, request, response);
                                 });
}

absl::StatusOr<v1::AttestPlanResponse> GrpcCuratorLink::AttestPlan(
    const v1::AttestPlanRequest& request, absl::Duration timeout) {
  return Call<v1::AttestPlanResponse>("AttestPlan", timeout,
                                      [&](grpc::ClientContext* context, auto* response) {
                                        return stub_->AttestPlan(context, request, response);
                                      });
}

absl::StatusOr<v1::ShareLabelsResponse> GrpcCuratorLink::ShareLabels(
    const v1::ShareLabelsRequest& request, absl::Duration timeout) {
  return Call<v1::ShareLabelsResponse>("ShareLabels", timeout,
                                       [&](grpc::ClientContext* context, auto* response) {
                                         return stub_->ShareLabels(context, request, response);
                                       });
}

absl::StatusOr<v1::LabelPairsResponse> GrpcCuratorLink::ReleaseLabelPairs(
    const v1::LabelPairsRequest& request, absl::Duration timeout) {
  return Call<v1::LabelPairsResponse>("ReleaseLabelPairs", timeout,
                                      [&](grpc::ClientContext* context, auto* response) {
                                        return stub_->ReleaseLabelPairs(context, request, response);
                                      });
}

absl::StatusOr<v1::MarginalsResponse> GrpcCuratorLink::ReleaseMarginals(
    const v1::MarginalsRequest& request, absl::Duration timeout) {
  return Call<v1::MarginalsResponse>("ReleaseMarginals", timeout,
                                     [&](grpc::ClientContext* context, auto* response) {
                                       return stub_->ReleaseMarginals(context, request, response);
                                     });
}

absl::StatusOr<std::unique_ptr<TrainStream>> GrpcCuratorLink::OpenTrain() {
  if (stub_ == nullptr) return absl::FailedPreconditionError("Train before Connect");
  auto stream = std::make_unique<Stream>(this);
  if (!stream->Open(*stub_)) return PartyShuttingDown();
  return stream;
}

}  // namespace vfsynth
