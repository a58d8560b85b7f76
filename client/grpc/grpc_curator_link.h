#ifndef VFSYNTH_CLIENT_GRPC_GRPC_CURATOR_LINK_H_
#define VFSYNTH_CLIENT_GRPC_GRPC_CURATOR_LINK_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "client/core/curator_link.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.grpc.pb.h"

namespace vfsynth {

// The party daemon's link: gRPC to config.curator over mTLS (plaintext only when the
// config says so), every call cancellable from another thread.
class GrpcCuratorLink final : public CuratorLink {
 public:
  explicit GrpcCuratorLink(v1::PartyConfig config) : config_(std::move(config)) {}

  absl::Status Connect(absl::Duration timeout) override;
  absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& request,
                                                absl::Duration timeout) override;
  absl::StatusOr<v1::AlignResponse> Align(const v1::AlignRequest& request,
                                          absl::Duration timeout) override;
  absl::StatusOr<v1::AttestPlanResponse> AttestPlan(const v1::AttestPlanRequest& request,
                                                    absl::Duration timeout) override;
  absl::StatusOr<v1::ShareLabelsResponse> ShareLabels(const v1::ShareLabelsRequest& request,
                                                      absl::Duration timeout) override;
  absl::StatusOr<v1::LabelPairsResponse> ReleaseLabelPairs(const v1::LabelPairsRequest& request,
                                                           absl::Duration timeout) override;
  absl::StatusOr<v1::MarginalsResponse> ReleaseMarginals(const v1::MarginalsRequest& request,
                                                         absl::Duration timeout) override;
  absl::StatusOr<std::unique_ptr<TrainStream>> OpenTrain() override;
  void Cancel() override;

 private:
  class Stream;
  // Makes `context` the call Cancel() cancels; false if the link already is cancelled.
  bool BeginCall(grpc::ClientContext* context);
  // Ends it; false if the link was cancelled meanwhile.
  bool EndCall();
  bool Cancelled();
  // One unary call (`rpc` issues it on the context it gets) that Cancel() can cut short.
  template <typename Response>
  absl::StatusOr<Response> Call(
      const std::string& what, absl::Duration timeout,
      const std::function<grpc::Status(grpc::ClientContext*, Response*)>& rpc);

  v1::PartyConfig config_;
  std::unique_ptr<v1::Curator::Stub> stub_;  // set by Connect
  absl::Mutex mu_;
  grpc::ClientContext* active_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_GRPC_GRPC_CURATOR_LINK_H_
