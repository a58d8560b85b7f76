#include "server/grpc/curator_service.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/net/grpc_status.h"
#include "common/net/peer_identity.h"
#include "common/protocol/chunking.h"
#include "server/core/train_stream.h"

namespace vfsynth {
namespace {

// A Train call as the core's PartyStream.
class GrpcPartyStream final : public PartyStream {
 public:
  GrpcPartyStream(grpc::ServerContext* context,
                  grpc::ServerReaderWriter<v1::CuratorMessage, v1::PartyMessage>* stream)
      : context_(context), stream_(stream) {}

  bool Read(v1::PartyMessage* piece) override { return stream_->Read(piece); }
  bool Write(const v1::CuratorMessage& piece) override { return stream_->Write(piece); }
  void Cancel() override { context_->TryCancel(); }
  bool Cancelled() const override { return context_->IsCancelled(); }
  std::string peer() const override { return context_->peer(); }

 private:
  grpc::ServerContext* context_;
  grpc::ServerReaderWriter<v1::CuratorMessage, v1::PartyMessage>* stream_;
};

}  // namespace

absl::StatusOr<std::string> CuratorService::Authenticate(const grpc::ServerContext& context,
                                                         const std::string& claimed) const {
  auto party = AuthenticatedParty(context, core_->roster(), core_->config().plaintext(), claimed);
  if (!party.ok())
    spdlog::warn("refused a call from {}: {}", context.peer(), party.status().ToString());
  return party;
}

grpc::Status CuratorService::Register(grpc::ServerContext* context,
                                      const v1::RegisterRequest* request,
                                      v1::RegisterResponse* response) {
  return Answer(*context, *request, response, &CuratorCore::Register);
}

grpc::Status CuratorService::Align(grpc::ServerContext* context, const v1::AlignRequest* request,
                                   v1::AlignResponse* response) {
  return Answer(*context, *request, response, &CuratorCore::Align);
}

grpc::Status CuratorService::AttestPlan(grpc::ServerContext* context,
                                        const v1::AttestPlanRequest* request,
                                        v1::AttestPlanResponse* response) {
  return Answer(*context, *request, response, &CuratorCore::AttestPlan);
}

grpc::Status CuratorService::ShareLabels(grpc::ServerContext* context,
                                         const v1::ShareLabelsRequest* request,
                                         v1::ShareLabelsResponse* response) {
  return Answer(*context, *request, response, &CuratorCore::ShareLabels);
}

grpc::Status CuratorService::ReleaseLabelPairs(grpc::ServerContext* context,
                                               const v1::LabelPairsRequest* request,
                                               v1::LabelPairsResponse* response) {
  return Answer(*context, *request, response, &CuratorCore::ReleaseLabelPairs);
}

grpc::Status CuratorService::ReleaseMarginals(grpc::ServerContext* context,
                                              const v1::MarginalsRequest* request,
                                              v1::MarginalsResponse* response) {
  return Answer(*context, *request, response, &CuratorCore::ReleaseMarginals);
}

grpc::Status CuratorService::Train(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::CuratorMessage, v1::PartyMessage>* stream) {
  GrpcPartyStream party_stream(context, stream);
  return ToGrpcStatus(ServeTrainStream(*core_, party_stream, [&](const std::string& claimed) {
    return Authenticate(*context, claimed);
  }));
}

grpc::Status CuratorService::GetStatus(grpc::ServerContext* context, const v1::StatusRequest*,
                                       v1::StatusResponse* response) {
  // The operator and the run's parties only, by their certificates' SAN URIs.
  const auto reader =
      AuthenticatedStatusReader(*context, core_->roster(), core_->config().plaintext());
  if (!reader.ok()) {
    spdlog::warn("refused a status call from {}: {}", context->peer(), reader.status().ToString());
    return ToGrpcStatus(reader.status());
  }
  *response = core_->Status();
  return grpc::Status::OK;
}

grpc::Status CuratorService::Synthesize(grpc::ServerContext* context,
                                        const v1::SynthesizeRequest* request,
                                        grpc::ServerWriter<v1::SynthesizeChunk>* writer) {
  auto party = Authenticate(*context, "");
  if (!party.ok()) return ToGrpcStatus(party.status());
  auto table = core_->Synthesize(request->rows());
  if (!table.ok()) return ToGrpcStatus(table.status());
  auto csv = FormatCsv(*table);
  if (!csv.ok()) return ToGrpcStatus(csv.status());
  for (size_t offset = 0; offset < csv->size(); offset += kChunkBytes) {
    v1::SynthesizeChunk chunk;
    chunk.set_csv(csv->substr(offset, kChunkBytes));
    if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  }
  return grpc::Status::OK;
}

}  // namespace vfsynth
