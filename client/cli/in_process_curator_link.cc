#include "client/cli/in_process_curator_link.h"

#include <deque>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "server/core/train_stream.h"

namespace vfsynth {
namespace {

// One direction of a stream: pieces in order until closed.
template <typename Message>
class Pipe {
 public:
  bool Push(Message message) {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    queue_.push_back(std::move(message));
    return true;
  }
  // Blocks until a piece is there (true) or the pipe is closed and drained (false).
  bool Pop(Message* message) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &Pipe::Ready));
    if (queue_.empty()) return false;
    *message = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

 private:
  bool Ready() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return closed_ || !queue_.empty(); }

  absl::Mutex mu_;
  std::deque<Message> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

// The curator's side of one stream (a PartyStream served on its own thread) and the
// pipes both sides use.
class InProcessCuratorLink::Connection final : public PartyStream {
 public:
  bool Read(v1::PartyMessage* piece) override { return to_curator_.Pop(piece); }
  bool Write(const v1::CuratorMessage& piece) override { return to_party_.Push(piece); }
  void Cancel() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    Close();
  }
  bool Cancelled() const override {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }
  std::string peer() const override { return "in-process"; }

  void Close() {
    to_curator_.Close();
    to_party_.Close();
  }
  Pipe<v1::PartyMessage>& to_curator() { return to_curator_; }
  Pipe<v1::CuratorMessage>& to_party() { return to_party_; }

 private:
  Pipe<v1::PartyMessage> to_curator_;
  Pipe<v1::CuratorMessage> to_party_;
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

namespace {

// The party's side: writes go to the curator's thread, Finish waits for it.
class InProcessTrainStream final : public TrainStream {
 public:
  InProcessTrainStream(std::shared_ptr<InProcessCuratorLink::Connection> connection,
                       CuratorCore* curator, AuthenticateParty authenticate)
      : connection_(std::move(connection)) {
    curator_side_ = std::thread([this, curator, authenticate = std::move(authenticate)] {
      served_ = ServeTrainStream(*curator, *connection_, authenticate);
      connection_->Close();  // the call is over: the party reads what is left, then the end
    });
  }
  ~InProcessTrainStream() override {
    if (curator_side_.joinable()) Finish().IgnoreError();
  }

  bool Write(const v1::PartyMessage& piece) override {
    return connection_->to_curator().Push(piece);
  }
  bool Read(v1::CuratorMessage* piece) override { return connection_->to_party().Pop(piece); }
  absl::Status Finish() override {
    connection_->to_curator().Close();
    curator_side_.join();
    if (served_.ok()) return served_;
    return absl::Status(served_.code(), absl::StrCat("Train stream: ", served_.message()));
  }

 private:
  std::shared_ptr<InProcessCuratorLink::Connection> connection_;
  std::thread curator_side_;
  absl::Status served_;  // written by curator_side_, read after joining it
};

}  // namespace

InProcessCuratorLink::~InProcessCuratorLink() = default;

void InProcessCuratorLink::Cancel() {
  std::shared_ptr<Connection> active;
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    active = active_;
  }
  if (active != nullptr) active->Cancel();
}

absl::Status InProcessCuratorLink::Connect(absl::Duration) {
  absl::MutexLock lock(&mu_);
  return cancelled_ ? PartyShuttingDown() : absl::OkStatus();
}

absl::StatusOr<std::string> InProcessCuratorLink::Authenticate(const std::string& claimed) const {
  if (!claimed.empty() && claimed != party_) {
    return absl::PermissionDeniedError(
        absl::StrCat("'", claimed, "' is not this link's party '", party_, "'"));
  }
  return party_;
}

template <typename Request, typename Response>
absl::StatusOr<Response> InProcessCuratorLink::Call(
    const std::string& what, const Request& request,
    absl::StatusOr<Response> (CuratorCore::*method)(const std::string&, const Request&)) {
  RETURN_IF_ERROR(Connect(absl::ZeroDuration()));
  absl::StatusOr<std::string> party = Authenticate(request.party());
  absl::StatusOr<Response> response =
      party.ok() ? (curator_->*method)(*party, request) : party.status();
  if (!response.ok()) {
    return absl::Status(response.status().code(),
                        absl::StrCat(what, ": ", response.status().message()));
  }
  return response;
}

absl::StatusOr<v1::RegisterResponse> InProcessCuratorLink::Register(
    const v1::RegisterRequest& request, absl::Duration) {
  return Call("Register", request, &CuratorCore::Register);
}

absl::StatusOr<v1::AlignResponse> InProcessCuratorLink::Align(const v1::AlignRequest& request,
                                                              absl::Duration) {
  return Call(absl::StrCat("Align hop ", request.hop()), request, &CuratorCore::Align);
}

absl::StatusOr<v1::AttestPlanResponse> InProcessCuratorLink::AttestPlan(
    const v1::AttestPlanRequest& request, absl::Duration) {
  return Call("AttestPlan", request, &CuratorCore::AttestPlan);
}

absl::StatusOr<v1::ShareLabelsResponse> InProcessCuratorLink::ShareLabels(
    const v1::ShareLabelsRequest& request, absl::Duration) {
  return Call("ShareLabels", request, &CuratorCore::ShareLabels);
}

absl::StatusOr<v1::LabelPairsResponse> InProcessCuratorLink::ReleaseLabelPairs(
    const v1::LabelPairsRequest& request, absl::Duration) {
  return Call("ReleaseLabelPairs", request, &CuratorCore::ReleaseLabelPairs);
}

absl::StatusOr<v1::MarginalsResponse> InProcessCuratorLink::ReleaseMarginals(
    const v1::MarginalsRequest& request, absl::Duration) {
  return Call("ReleaseMarginals", request, &CuratorCore::ReleaseMarginals);
}

absl::StatusOr<std::unique_ptr<TrainStream>> InProcessCuratorLink::OpenTrain() {
  auto connection = std::make_shared<Connection>();
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return PartyShuttingDown();
    active_ = connection;
  }
  return std::make_unique<InProcessTrainStream>(
      connection, curator_, [this](const std::string& claimed) { return Authenticate(claimed); });
}

}  // namespace vfsynth
