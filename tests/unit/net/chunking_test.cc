#include "common/protocol/chunking.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/protocol/tensor_codec.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMiB = 1 << 20;

// A Features message whose h_real carries `bytes` bytes of distinct floats.
v1::PartyMessage BigFeatures(size_t bytes, float seed) {
  std::vector<float> values(bytes / sizeof(float));
  for (size_t i = 0; i < values.size(); ++i) values[i] = seed + static_cast<float>(i % 977);
  v1::PartyMessage message;
  message.set_run_id("run-7");
  message.set_round(3);
  message.set_step(16);
  EncodeTensor(values.data(), std::vector<int64_t>{static_cast<int64_t>(values.size())},
               message.mutable_features()->mutable_h_real());
  return message;
}

// Feeds `chunks` in order; returns the one completed message (fails on errors).
v1::PartyMessage Reassemble(ChunkAssembler<v1::PartyMessage>& assembler,
                            const std::vector<v1::PartyMessage>& chunks) {
  v1::PartyMessage whole;
  for (size_t i = 0; i < chunks.size(); ++i) {
    auto result = assembler.Add(chunks[i]);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return whole;
    EXPECT_EQ(result->has_value(), i + 1 == chunks.size()) << "chunk " << i;
    if (result->has_value()) whole = **result;
  }
  return whole;
}

TEST(ChunkingTest, SmallMessagePassesThroughUnchanged) {
  v1::PartyMessage message;
  message.set_run_id("r");
  message.set_step(2);
  message.mutable_hello()->set_party("alpha");
  const auto pieces = SplitIntoChunks(message, kMiB, 9);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_FALSE(pieces[0].has_chunk());
  EXPECT_EQ(pieces[0].SerializeAsString(), message.SerializeAsString());

  ChunkAssembler<v1::PartyMessage> assembler(kMiB);
  auto result = assembler.Add(pieces[0]);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_value());
  EXPECT_EQ((*result)->SerializeAsString(), message.SerializeAsString());
  EXPECT_EQ(assembler.last_wire_bytes(), message.ByteSizeLong());
}

TEST(ChunkingTest, LargeMessageSplitsAndReassemblesIdentically) {
  const v1::PartyMessage message = BigFeatures(3 * kMiB, 1.0f);
  const std::string bytes = message.SerializeAsString();
  ASSERT_GT(bytes.size(), 3 * kMiB);  // tensor plus envelope: a fourth, short chunk
  const auto chunks = SplitIntoChunks(message, kMiB, 42);
  ASSERT_EQ(chunks.size(), 4u);
  size_t payload = 0;
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    const v1::PartyMessage& c = chunks[i];
    ASSERT_TRUE(c.has_chunk()) << i;
    EXPECT_EQ(c.chunk().message_id(), 42u);
    EXPECT_EQ(c.chunk().index(), i);
    EXPECT_EQ(c.chunk().count(), 4u);
    EXPECT_LE(c.chunk().data().size(), kMiB);
    // The envelope travels on every chunk so a receiver can route it.
    EXPECT_EQ(c.run_id(), "run-7");
    EXPECT_EQ(c.round(), 3);
    EXPECT_EQ(c.step(), 16);
    payload += c.chunk().data().size();
  }
  EXPECT_EQ(payload, bytes.size());

  ChunkAssembler<v1::PartyMessage> assembler(64 * kMiB);
  EXPECT_EQ(Reassemble(assembler, chunks).SerializeAsString(), bytes);
  // Traffic counters see every piece, not only the last one.
  size_t wire = 0;
  for (const v1::PartyMessage& c : chunks) wire += c.ByteSizeLong();
  EXPECT_EQ(assembler.last_wire_bytes(), wire);
  EXPECT_GT(assembler.last_wire_bytes(), bytes.size());
}

TEST(ChunkingTest, OutOfOrderChunkIsAnError) {
  const auto chunks = SplitIntoChunks(BigFeatures(3 * kMiB, 1.0f), kMiB, 5);
  ChunkAssembler<v1::PartyMessage> assembler(64 * kMiB);
  ASSERT_TRUE(assembler.Add(chunks[0]).ok());
  auto result = assembler.Add(chunks[2]);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("chunk 2/4 of message 5 out of order"));

  // The broken message is dropped: its next chunk does not resume it.
  EXPECT_FALSE(assembler.Add(chunks[3]).ok());
  // A stream starting in the middle is refused too.
  ChunkAssembler<v1::PartyMessage> fresh(64 * kMiB);
  EXPECT_EQ(fresh.Add(chunks[1]).status().code(), absl::StatusCode::kInvalidArgument);
  // A repeated chunk is out of order.
  ChunkAssembler<v1::PartyMessage> repeat(64 * kMiB);
  ASSERT_TRUE(repeat.Add(chunks[0]).ok());
  EXPECT_FALSE(repeat.Add(chunks[0]).ok());
}

TEST(ChunkingTest, ChangedOrZeroCountIsAnError) {
  auto chunks = SplitIntoChunks(BigFeatures(3 * kMiB, 1.0f), kMiB, 5);
  ChunkAssembler<v1::PartyMessage> assembler(64 * kMiB);
  ASSERT_TRUE(assembler.Add(chunks[0]).ok());
  chunks[1].mutable_chunk()->set_count(5);
  EXPECT_EQ(assembler.Add(chunks[1]).status().code(), absl::StatusCode::kInvalidArgument);

  v1::PartyMessage zero;
  zero.mutable_chunk()->set_message_id(8);
  zero.mutable_chunk()->set_count(0);
  EXPECT_EQ(assembler.Add(zero).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChunkingTest, StreamOverTheByteLimitIsResourceExhausted) {
  const auto chunks = SplitIntoChunks(BigFeatures(3 * kMiB, 1.0f), kMiB, 5);
  ChunkAssembler<v1::PartyMessage> assembler(2 * kMiB + 10);
  ASSERT_TRUE(assembler.Add(chunks[0]).ok());
  ASSERT_TRUE(assembler.Add(chunks[1]).ok());
  auto result = assembler.Add(chunks[2]);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(result.status().message(), HasSubstr("exceed"));
}

TEST(ChunkingTest, CompletedMessagesReleaseTheirBytes) {
  // The limit bounds what is buffered at once, not the stream's lifetime total.
  ChunkAssembler<v1::PartyMessage> assembler(4 * kMiB);
  for (uint64_t id = 0; id < 4; ++id) {
    const v1::PartyMessage message = BigFeatures(3 * kMiB, static_cast<float>(id));
    EXPECT_EQ(Reassemble(assembler, SplitIntoChunks(message, kMiB, id)).SerializeAsString(),
              message.SerializeAsString());
  }
  // So do messages dropped for an error.
  const auto chunks = SplitIntoChunks(BigFeatures(3 * kMiB, 9.0f), kMiB, 7);
  ASSERT_TRUE(assembler.Add(chunks[0]).ok());
  ASSERT_TRUE(assembler.Add(chunks[1]).ok());
  ASSERT_FALSE(assembler.Add(chunks[3]).ok());
  const v1::PartyMessage next = BigFeatures(3 * kMiB, 10.0f);
  EXPECT_EQ(Reassemble(assembler, SplitIntoChunks(next, kMiB, 8)).SerializeAsString(),
            next.SerializeAsString());
}

TEST(ChunkingTest, InterleavedMessagesCannotTogetherExceedTheByteLimit) {
  // Each message alone fits; a sender opening many message ids at once must not
  // make the receiver buffer more than its limit.
  const auto a = SplitIntoChunks(BigFeatures(3 * kMiB, 1.0f), kMiB, 1);
  const auto b = SplitIntoChunks(BigFeatures(3 * kMiB, 2.0f), kMiB, 2);
  ChunkAssembler<v1::PartyMessage> assembler(5 * kMiB);
  absl::Status status;
  for (size_t i = 0; i < a.size() && status.ok(); ++i) {
    for (const auto* chunks : {&a, &b}) {
      auto result = assembler.Add((*chunks)[i]);
      status = result.status();
      if (!status.ok()) break;
    }
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("exceed 5242880 bytes"));
}

TEST(ChunkingTest, InterleavedMessageIdsReassembleIndependently) {
  const v1::PartyMessage first = BigFeatures(2 * kMiB, 1.0f);
  const v1::PartyMessage second = BigFeatures(3 * kMiB, 5.0f);
  const auto a = SplitIntoChunks(first, kMiB, 10);
  const auto b = SplitIntoChunks(second, kMiB, 11);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 4u);
  ChunkAssembler<v1::PartyMessage> assembler(64 * kMiB);
  std::vector<std::string> completed;
  for (size_t i = 0; i < b.size(); ++i) {
    for (const auto* chunks : {&a, &b}) {
      if (i >= chunks->size()) continue;
      auto result = assembler.Add((*chunks)[i]);
      ASSERT_TRUE(result.ok()) << result.status();
      if (result->has_value()) completed.push_back((*result)->SerializeAsString());
    }
  }
  ASSERT_EQ(completed.size(), 2u);
  EXPECT_EQ(completed[0], first.SerializeAsString());
  EXPECT_EQ(completed[1], second.SerializeAsString());
}

TEST(ChunkingTest, GarbageBytesAreAnError) {
  ChunkAssembler<v1::PartyMessage> assembler(kMiB);
  v1::PartyMessage garbage;
  garbage.mutable_chunk()->set_message_id(3);
  garbage.mutable_chunk()->set_count(1);
  garbage.mutable_chunk()->set_data(std::string("\xff\xff\xff\xff\x0f", 5));
  auto result = assembler.Add(garbage);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("not form a valid message"));
}

TEST(ChunkingTest, ChunkInsideAChunkIsAnError) {
  // Reassembly must yield a real message, never another chunk (no nesting games).
  v1::PartyMessage inner;
  inner.mutable_chunk()->set_message_id(1);
  inner.mutable_chunk()->set_count(1);
  inner.mutable_chunk()->set_data("x");
  v1::PartyMessage outer;
  outer.mutable_chunk()->set_message_id(2);
  outer.mutable_chunk()->set_count(1);
  outer.mutable_chunk()->set_data(inner.SerializeAsString());
  ChunkAssembler<v1::PartyMessage> assembler(kMiB);
  EXPECT_EQ(assembler.Add(outer).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChunkingTest, CuratorMessagesChunkToo) {
  v1::CuratorMessage message;
  message.set_run_id("run");
  message.set_round(1);
  message.set_step(-1);
  const std::vector<float> values(300000, 0.5f);
  EncodeTensor(values.data(), std::vector<int64_t>{300000},
               message.mutable_generator_task()->mutable_fake_slice());
  const auto chunks = SplitIntoChunks(message, 500000, 0);
  ASSERT_EQ(chunks.size(), 3u);
  ChunkAssembler<v1::CuratorMessage> assembler(2 * kMiB);
  std::optional<v1::CuratorMessage> whole;
  for (const auto& chunk : chunks) {
    auto result = assembler.Add(chunk);
    ASSERT_TRUE(result.ok()) << result.status();
    whole = *result;
  }
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->SerializeAsString(), message.SerializeAsString());
}

}  // namespace
}  // namespace vfsynth
