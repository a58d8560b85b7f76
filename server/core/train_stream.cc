#include "server/core/train_stream.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/protocol/chunking.h"
#include "common/protocol/protocol_version.h"

namespace vfsynth {

absl::Status ServeTrainStream(CuratorCore& core, PartyStream& stream,
                              const AuthenticateParty& authenticate) {
  // In plaintext mode the Hello names the party; with mTLS the certificate does.
  v1::PartyMessage hello;
  if (!stream.Read(&hello) || !hello.has_hello()) {
    return absl::InvalidArgumentError("the first Train message must be Hello");
  }
  ASSIGN_OR_RETURN(const std::string party, authenticate(hello.hello().party()));
  if (hello.hello().protocol_version() != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "protocol version ", hello.hello().protocol_version(), " is not ", kProtocolVersion));
  }
  if (hello.run_id() != core.config().run_id()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run id '", hello.run_id(), "' is not this run"));
  }
  RETURN_IF_ERROR(core.CheckAttested(party));
  SessionHub& hub = core.hub();
  const int index = hub.Index(party);
  RETURN_IF_ERROR(hub.Connect(index));
  const uint64_t connection = hub.connection(index);
  if (connection > 1) {
    spdlog::info(
        "party {} rejoined from {} (stream {}, committed critic step {}): resending its round",
        party, stream.peer(), connection, hello.hello().committed_step());
  } else {
    spdlog::info("party {} opened its Train stream from {}", party, stream.peer());
  }

  // One writer thread drains the outbox; this thread reads (a stream allows one of each).
  std::atomic<bool> write_failed{false};
  std::thread writer([&] {
    uint64_t next_id = 0;
    while (auto message = hub.NextOutgoing(index, connection)) {
      const bool written =
          WriteChunked(*message, kChunkBytes, next_id++, [&](const v1::CuratorMessage& piece) {
            hub.CountSent(index, piece.ByteSizeLong());
            return stream.Write(piece);
          });
      if (!written) {
        write_failed = true;
        return;
      }
    }
    // A stopping curator ends the stream now rather than after the transport's grace
    // period: the party reconnects and rejoins a resumed run.
    if (hub.cancelled()) stream.Cancel();
  });
  ChunkAssembler<v1::PartyMessage> assembler(core.config().max_message_bytes());
  v1::PartyMessage message;
  absl::Status result = absl::OkStatus();
  while (!write_failed && stream.Read(&message)) {
    auto whole = assembler.Add(std::move(message));
    if (!whole.ok()) {
      result = whole.status();
      break;
    }
    if (whole->has_value()) hub.Deliver(index, std::move(**whole), assembler.last_wire_bytes());
  }
  if (stream.Cancelled()) result = absl::CancelledError("stream cancelled");
  hub.Disconnect(index, connection);
  writer.join();
  spdlog::info("party {} closed its Train stream", party);
  return result;
}

}  // namespace vfsynth
