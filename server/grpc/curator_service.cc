#include "server/grpc/curator_service.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/protocol/chunking.h"
#include "common/net/peer_identity.h"

namespace vfsynth {
namespace {

// Payloads above this are chunked (well under every receiver's limit).
constexpr size_t kChunkBytes = 1 << 20;

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::StatusOr<std::string> CuratorService::Authenticate(const grpc::ServerContext& context,
                                                         const std::string& claimed) const {
  auto party = AuthenticatedParty(context, core_->roster(), core_->config().plaintext(), claimed);
  if (!party.ok()) spdlog::warn("refused a call from {}: {}", context.peer(), party.status().ToString());
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

grpc::Status CuratorService::AttestPlan(grpc::ServerContext* context, const v1::AttestPlanRequest* request,
                                        v1::AttestPlanResponse* response) {
  return Answer(*context, *request, response, &CuratorCore::AttestPlan);
}

grpc::Status CuratorService::ShareLabels(grpc::ServerContext* context, const v1::ShareLabelsRequest* request,
                                         v1::ShareLabelsResponse* response) {
  return Answer(*context, *request, response, &CuratorCore::ShareLabels);
}

grpc::Status CuratorService::ReleaseLabelPairs(grpc::ServerContext* context, const v1::LabelPairsRequest* request,
                                               v1::LabelPairsResponse* response) {
  return Answer(*context, *request, response, &CuratorCore::ReleaseLabelPairs);
}

grpc::Status CuratorService::Train(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::CuratorMessage, v1::PartyMessage>* stream) {
  // In plaintext mode the Hello names the party; with mTLS the certificate does.
  v1::PartyMessage hello;
  if (!stream->Read(&hello) || !hello.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first Train message must be Hello");
  }
  auto party = Authenticate(*context, hello.hello().party());
  if (!party.ok()) return ToGrpcStatus(party.status());
  if (hello.hello().protocol_version() != kProtocolVersion) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("protocol version ", hello.hello().protocol_version(),
                                     " is not ", kProtocolVersion));
  }
  if (hello.run_id() != core_->config().run_id()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("run id '", hello.run_id(), "' is not this run"));
  }
  if (absl::Status attested = core_->CheckAttested(*party); !attested.ok()) return ToGrpcStatus(attested);
  SessionHub& hub = core_->hub();
  const int index = hub.Index(*party);
  if (absl::Status status = hub.Connect(index, context->peer()); !status.ok()) return ToGrpcStatus(status);
  const uint64_t connection = hub.connection(index);
  if (connection > 1) {
    spdlog::info("party {} rejoined from {} (stream {}, committed critic step {}): resending its round",
                 *party, context->peer(), connection, hello.hello().committed_step());
  } else {
    spdlog::info("party {} opened its Train stream from {}", *party, context->peer());
  }

  // One writer thread drains the outbox; this thread reads (gRPC allows one of each).
  std::atomic<bool> write_failed{false};
  std::thread writer([&] {
    uint64_t next_id = 0;
    while (auto message = hub.NextOutgoing(index, connection)) {
      const bool written = WriteChunked(*message, kChunkBytes, next_id++, [&](const v1::CuratorMessage& piece) {
        hub.CountSent(index, piece.ByteSizeLong());
        return stream->Write(piece);
      });
      if (!written) {
        write_failed = true;
        return;
      }
    }
    // A stopping curator ends the stream now rather than after the server's grace period:
    // the party redials and rejoins a resumed run.
    if (hub.cancelled()) context->TryCancel();
  });
  ChunkAssembler<v1::PartyMessage> assembler(core_->config().max_message_bytes());
  v1::PartyMessage message;
  grpc::Status result = grpc::Status::OK;
  while (!write_failed && stream->Read(&message)) {
    auto whole = assembler.Add(std::move(message));
    if (!whole.ok()) {
      result = ToGrpcStatus(whole.status());
      break;
    }
    if (whole->has_value()) hub.Deliver(index, std::move(**whole), assembler.last_wire_bytes());
  }
  if (context->IsCancelled()) result = grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled");
  hub.Disconnect(index, connection);
  writer.join();
  spdlog::info("party {} closed its Train stream", *party);
  return result;
}

grpc::Status CuratorService::GetStatus(grpc::ServerContext* context, const v1::StatusRequest*,
                                       v1::StatusResponse* response) {
  // Status holds no private data; any peer with a certificate from the CA may ask.
  if (!core_->config().plaintext()) {
    const auto auth = context->auth_context();
    if (auth == nullptr || !auth->IsPeerAuthenticated()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no verified client certificate");
    }
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
