// The checkpoint container: round trip, refusal of another run's or configuration's
// checkpoint, damage detection, and atomicity against a writer killed mid-write.
#include "common/checkpoint/checkpoint_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "common/base/file_io.h"
#include "tests/unit/checkpoint/kill_writer.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

v1::CheckpointHeader Header(const std::string& run_id, int64_t round) {
  v1::CheckpointHeader header;
  header.set_kind("curator");
  header.set_run_id(run_id);
  header.set_round(round);
  header.set_config_digest("config-a");
  header.set_data_digest("data-a");
  return header;
}

std::string Payload(size_t size, char fill) {
  std::string payload(size, fill);
  for (size_t i = 0; i < size; i += 4099) payload[i] = static_cast<char>(i * 31);
  return payload;
}

TEST(CheckpointFileTest, RoundTripKeepsHeaderAndPayload) {
  const std::string path = ::testing::TempDir() + "/roundtrip.ckpt";
  const std::string payload = Payload(100000, 'x') + std::string("\0\xff", 2);
  ASSERT_TRUE(WriteCheckpoint(path, Header("run-1", 7), payload).ok());
  auto read = ReadCheckpoint(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->payload, payload);
  EXPECT_EQ(read->header.run_id(), "run-1");
  EXPECT_EQ(read->header.round(), 7);
  EXPECT_EQ(read->header.format_version(), kCheckpointFormatVersion);
  EXPECT_TRUE(CheckCheckpointMatches(read->header, Header("run-1", 0), path).ok());
}

TEST(CheckpointFileTest, RefusesAnotherRunConfigurationDataOrKind) {
  const std::string path = ::testing::TempDir() + "/refuse.ckpt";
  ASSERT_TRUE(WriteCheckpoint(path, Header("run-1", 3), "state").ok());
  auto read = ReadCheckpoint(path);
  ASSERT_TRUE(read.ok());
  v1::CheckpointHeader other_run = Header("run-2", 3);
  absl::Status status = CheckCheckpointMatches(read->header, other_run, path);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("another run (checkpoint: run-1, this run: run-2)"));
  EXPECT_THAT(status.message(), HasSubstr(path));

  v1::CheckpointHeader other_config = Header("run-1", 3);
  other_config.set_config_digest("config-b");
  status = CheckCheckpointMatches(read->header, other_config, path);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("configuration"));

  v1::CheckpointHeader other_data = Header("run-1", 3);
  other_data.set_data_digest("data-b");
  EXPECT_THAT(CheckCheckpointMatches(read->header, other_data, path).message(),
              HasSubstr("aligned records"));

  v1::CheckpointHeader other_kind = Header("run-1", 3);
  other_kind.set_kind("party:bank");
  EXPECT_THAT(CheckCheckpointMatches(read->header, other_kind, path).message(),
              HasSubstr("daemon"));
}

TEST(CheckpointFileTest, DetectsDamageAndForeignFiles) {
  const std::string path = ::testing::TempDir() + "/damaged.ckpt";
  ASSERT_TRUE(WriteCheckpoint(path, Header("run-1", 1), Payload(5000, 'p')).ok());
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  std::string flipped = *bytes;
  flipped[flipped.size() - 10] ^= 0x01;
  ASSERT_TRUE(WriteFileAtomically(path, flipped).ok());
  EXPECT_EQ(ReadCheckpoint(path).status().code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(WriteFileAtomically(path, bytes->substr(0, bytes->size() / 2)).ok());
  EXPECT_EQ(ReadCheckpoint(path).status().code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(WriteFileAtomically(path, "{\"not\": \"a checkpoint\"}").ok());
  EXPECT_THAT(ReadCheckpoint(path).status().message(), HasSubstr("is not a vfsynth checkpoint"));
  EXPECT_EQ(ReadCheckpoint(path + ".absent").status().code(), absl::StatusCode::kNotFound);
}

TEST(CheckpointFileTest, RefusesNewerFormat) {
  const std::string path = ::testing::TempDir() + "/future.ckpt";
  ASSERT_TRUE(WriteCheckpoint(path, Header("run-1", 1), "x").ok());
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  // format_version is field 1 (varint): the header's first two bytes after the length.
  std::string edited = *bytes;
  const size_t header_start = std::string("VFSYNTH-CHECKPOINT\n").size() + 4;
  ASSERT_EQ(edited[header_start], 0x08);
  edited[header_start + 1] = 9;
  ASSERT_TRUE(WriteFileAtomically(path, edited).ok());
  const absl::Status status = ReadCheckpoint(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("format version 9"));
}

// A writer killed at an arbitrary moment (kill -9) leaves either the old or the new
// checkpoint readable under the final name, never a partial one.
TEST(CheckpointFileTest, WriterKilledMidWriteLeavesACompleteCheckpoint) {
  const std::string dir = ::testing::TempDir() + "/atomic";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(MakeDirectories(dir).ok());
  const std::string path = dir + "/curator.ckpt";
  const std::string old_payload = Payload(1 << 20, 'o');
  const std::string new_payload = Payload(32 << 20, 'n');
  ASSERT_TRUE(WriteCheckpoint(path, Header("run-1", 1), old_payload).ok());
  std::mt19937 random(std::random_device{}());
  for (int attempt = 0; attempt < 5; ++attempt) {
    KillWriterMidWay(
        [&](const std::function<void()>& ready) {
          ready();
          _exit(WriteCheckpoint(path, Header("run-1", 2), new_payload).ok() ? 0 : 1);
        },
        40000, random);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    auto read = ReadCheckpoint(path);
    ASSERT_TRUE(read.ok()) << "attempt " << attempt << ": " << read.status();
    if (read->header.round() == 1) {
      EXPECT_EQ(read->payload, old_payload);
    } else {
      EXPECT_EQ(read->header.round(), 2);
      EXPECT_EQ(read->payload, new_payload);
    }
    // Restore the old one for the next attempt; leftover temp files are never read.
    ASSERT_TRUE(WriteCheckpoint(path, Header("run-1", 1), old_payload).ok());
  }
}

}  // namespace
}  // namespace vfsynth
