#ifndef VFSYNTH_COMMON_PROTOCOL_CHUNKING_H_
#define VFSYNTH_COMMON_PROTOCOL_CHUNKING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {

// The pieces both sides of a stream cut payloads into: well under every receiver's limit.
inline constexpr size_t kChunkBytes = 1 << 20;

// Splits a stream message whose serialized size exceeds `max_bytes` into messages
// carrying only a `chunk` payload (plus the same run/round/step); smaller messages
// pass through unchanged. `Message` is CuratorMessage or PartyMessage.
template <typename Message>
std::vector<Message> SplitIntoChunks(const Message& message, size_t max_bytes,
                                     uint64_t message_id) {
  if (message.ByteSizeLong() <= max_bytes) return {message};
  const std::string bytes = message.SerializeAsString();
  const uint32_t count = static_cast<uint32_t>((bytes.size() + max_bytes - 1) / max_bytes);
  std::vector<Message> chunks(count);
  for (uint32_t i = 0; i < count; ++i) {
    chunks[i].set_run_id(message.run_id());
    chunks[i].set_round(message.round());
    chunks[i].set_step(message.step());
    auto* chunk = chunks[i].mutable_chunk();
    chunk->set_message_id(message_id);
    chunk->set_index(i);
    chunk->set_count(count);
    chunk->set_data(bytes.substr(static_cast<size_t>(i) * max_bytes, max_bytes));
  }
  return chunks;
}

// Writes `message` with `write` (bool(const Message&), false on failure): as it is
// when its serialized size is at most `max_bytes` (no copy, no extra serialization),
// else as the chunks of SplitIntoChunks. False as soon as a write fails.
template <typename Message, typename Write>
bool WriteChunked(const Message& message, size_t max_bytes, uint64_t message_id, Write&& write) {
  if (message.ByteSizeLong() <= max_bytes) return write(message);
  for (const Message& piece : SplitIntoChunks(message, max_bytes, message_id)) {
    if (!write(piece)) return false;
  }
  return true;
}

// Reassembles chunked messages. Chunks of one message must arrive in order on one
// stream; anything else (gaps, a changed count, too many bytes) is an error.
// `max_total_bytes` bounds everything buffered at once, over all pending message
// ids, so a peer cannot grow the buffer by interleaving many messages.
template <typename Message>
class ChunkAssembler {
 public:
  explicit ChunkAssembler(size_t max_total_bytes) : max_total_bytes_(max_total_bytes) {}

  // Returns the message when `message` is complete (not a chunk, or the last chunk),
  // nullopt while chunks are pending.
  absl::StatusOr<std::optional<Message>> Add(Message message) {
    const size_t piece_bytes = message.ByteSizeLong();
    if (!message.has_chunk()) {
      last_wire_bytes_ = piece_bytes;
      return std::optional<Message>(std::move(message));
    }
    const auto& chunk = message.chunk();
    Pending& pending = pending_[chunk.message_id()];
    if (chunk.count() == 0 || chunk.index() != pending.next ||
        (pending.next > 0 && chunk.count() != pending.count)) {
      Drop(chunk.message_id());
      return absl::InvalidArgumentError(absl::StrCat("chunk ", chunk.index(), "/", chunk.count(),
                                                     " of message ", chunk.message_id(),
                                                     " out of order"));
    }
    if (chunk.data().size() > max_total_bytes_ - buffered_bytes_) {
      Drop(chunk.message_id());
      return absl::ResourceExhaustedError(
          absl::StrCat("chunked messages exceed ", max_total_bytes_, " bytes"));
    }
    pending.count = chunk.count();
    pending.bytes += chunk.data();
    pending.wire_bytes += piece_bytes;
    buffered_bytes_ += chunk.data().size();
    ++pending.next;
    if (pending.next < pending.count) return std::optional<Message>();
    Message whole;
    const bool parsed = whole.ParseFromString(pending.bytes);
    last_wire_bytes_ = pending.wire_bytes;
    Drop(chunk.message_id());
    if (!parsed || whole.has_chunk()) {
      return absl::InvalidArgumentError("reassembled chunks do not form a valid message");
    }
    return std::optional<Message>(std::move(whole));
  }

  // Serialised size of every piece of the message Add last returned: what crossed the
  // wire for it (traffic counters), chunk headers included.
  size_t last_wire_bytes() const { return last_wire_bytes_; }

 private:
  struct Pending {
    uint32_t next = 0;
    uint32_t count = 0;
    std::string bytes;
    size_t wire_bytes = 0;
  };
  void Drop(uint64_t message_id) {
    auto it = pending_.find(message_id);
    if (it == pending_.end()) return;
    buffered_bytes_ -= it->second.bytes.size();
    pending_.erase(it);
  }

  size_t max_total_bytes_;
  size_t last_wire_bytes_ = 0;
  size_t buffered_bytes_ = 0;  // sum of pending_[*].bytes sizes, <= max_total_bytes_
  absl::flat_hash_map<uint64_t, Pending> pending_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PROTOCOL_CHUNKING_H_
