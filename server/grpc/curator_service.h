#ifndef VFSYNTH_SERVER_GRPC_CURATOR_SERVICE_H_
#define VFSYNTH_SERVER_GRPC_CURATOR_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "common/net/grpc_status.h"
#include "server/core/curator_core.h"
#include "vfsynth/v1/curator.grpc.pb.h"

namespace vfsynth {

// Thin gRPC adapter: authenticates every call against the roster, translates
// messages and calls CuratorCore. Holds no training state of its own.
class CuratorService final : public v1::Curator::Service {
 public:
  explicit CuratorService(CuratorCore* core) : core_(core) {}

  grpc::Status Register(grpc::ServerContext* context, const v1::RegisterRequest* request,
                        v1::RegisterResponse* response) override;
  grpc::Status Align(grpc::ServerContext* context, const v1::AlignRequest* request,
                     v1::AlignResponse* response) override;
  grpc::Status AttestPlan(grpc::ServerContext* context, const v1::AttestPlanRequest* request,
                          v1::AttestPlanResponse* response) override;
  grpc::Status ShareLabels(grpc::ServerContext* context, const v1::ShareLabelsRequest* request,
                           v1::ShareLabelsResponse* response) override;
  grpc::Status ReleaseLabelPairs(grpc::ServerContext* context, const v1::LabelPairsRequest* request,
                                 v1::LabelPairsResponse* response) override;
  grpc::Status ReleaseMarginals(grpc::ServerContext* context, const v1::MarginalsRequest* request,
                                v1::MarginalsResponse* response) override;
  grpc::Status Train(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::CuratorMessage, v1::PartyMessage>* stream) override;
  grpc::Status GetStatus(grpc::ServerContext* context, const v1::StatusRequest* request,
                         v1::StatusResponse* response) override;
  grpc::Status Synthesize(grpc::ServerContext* context, const v1::SynthesizeRequest* request,
                          grpc::ServerWriter<v1::SynthesizeChunk>* writer) override;

 private:
  absl::StatusOr<std::string> Authenticate(const grpc::ServerContext& context,
                                           const std::string& claimed) const;
  // A unary call from the party the request names: authenticated, then the core's answer.
  template <typename Request, typename Response, typename Method>
  grpc::Status Answer(const grpc::ServerContext& context, const Request& request,
                      Response* response, Method method) {
    auto party = Authenticate(context, request.party());
    if (!party.ok()) return ToGrpcStatus(party.status());
    auto result = (core_->*method)(*party, request);
    if (!result.ok()) return ToGrpcStatus(result.status());
    *response = std::move(*result);
    return grpc::Status::OK;
  }

  CuratorCore* core_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_GRPC_CURATOR_SERVICE_H_
