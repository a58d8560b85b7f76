// Two-slot checkpoints: alternation, the newest valid slot wins, torn/damaged slots
// fall back to the other one and are the next to be overwritten, and a writer killed
// mid-write always leaves a complete checkpoint.
#include "common/checkpoint/checkpoint_slots.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "tests/unit/checkpoint/kill_writer.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

v1::CheckpointHeader Header(int64_t step) {
  v1::CheckpointHeader header;
  header.set_kind("party:bank");
  header.set_run_id("run-1");
  header.set_step(step);
  return header;
}

std::string Payload(int64_t step, size_t size = 20000) {
  std::string payload(size, static_cast<char>('a' + (step + 26) % 26));
  for (size_t i = 0; i < size; i += 997) payload[i] = static_cast<char>(i * 31 + step);
  return payload;
}

// Removes the directories FreshDir made once this process's tests have run.
class FreshDirs : public ::testing::Environment {
 public:
  static std::vector<std::string>& made() {
    static auto* dirs = new std::vector<std::string>();
    return *dirs;
  }
  void TearDown() override {
    for (const std::string& dir : made()) std::filesystem::remove_all(dir);
  }
};
::testing::Environment* const kFreshDirs = ::testing::AddGlobalTestEnvironment(new FreshDirs);

std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/slots_", ::getpid(), "_", name);
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(MakeDirectories(dir).ok());
  FreshDirs::made().push_back(dir);
  return dir;
}

int64_t StepInSlot(const CheckpointSlots& slots, int slot) {
  // A second reader over a copy holding only this slot.
  const std::string dir = FreshDir(absl::StrCat("single", slot));
  std::filesystem::copy_file(slots.SlotPath(slot), dir + "/s.0");
  CheckpointSlots single(dir + "/s");
  auto read = single.Read();
  return read.ok() ? read->header.step() : -100;
}

void Corrupt(const std::string& path, size_t offset_from_end) {
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  std::string damaged = *bytes;
  damaged[damaged.size() - offset_from_end] ^= 0x20;
  ASSERT_TRUE(WriteFileAtomically(path, damaged).ok());
}

TEST(CheckpointSlotsTest, AlternatesAndReadsTheNewest) {
  const std::string dir = FreshDir("alternate");
  CheckpointSlots slots(dir + "/state");
  EXPECT_FALSE(slots.Exists());
  EXPECT_EQ(slots.Read().status().code(), absl::StatusCode::kNotFound);
  for (int64_t step = -1; step < 4; ++step) {
    ASSERT_TRUE(slots.Write(Header(step), Payload(step)).ok());
    auto read = slots.Read();
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->header.step(), step);
    EXPECT_EQ(read->payload, Payload(step));
    EXPECT_EQ(read->header.format_version(), kCheckpointFormatVersion);
  }
  EXPECT_TRUE(slots.Exists());
  // The last two writes are both kept, one per slot.
  EXPECT_THAT((std::vector<int64_t>{StepInSlot(slots, 0), StepInSlot(slots, 1)}),
              ::testing::UnorderedElementsAre(2, 3));
}

TEST(CheckpointSlotsTest, ANewWriterOverwritesTheOlderSlotNotTheNewest) {
  const std::string dir = FreshDir("new-writer");
  {
    CheckpointSlots first(dir + "/state");
    for (int64_t step = 0; step < 3; ++step)
      ASSERT_TRUE(first.Write(Header(step), Payload(step)).ok());
  }
  CheckpointSlots restarted(dir + "/state");  // e.g. after a restart, without a Read first
  ASSERT_TRUE(restarted.Write(Header(3), Payload(3)).ok());
  EXPECT_THAT((std::vector<int64_t>{StepInSlot(restarted, 0), StepInSlot(restarted, 1)}),
              ::testing::UnorderedElementsAre(2, 3));
}

TEST(CheckpointSlotsTest, ATornOrDamagedNewestSlotFallsBackToTheOtherAndIsRewrittenNext) {
  const std::string dir = FreshDir("torn");
  CheckpointSlots slots(dir + "/state");
  ASSERT_TRUE(slots.Write(Header(0), Payload(0)).ok());
  ASSERT_TRUE(slots.Write(Header(1), Payload(1)).ok());
  const int newest = StepInSlot(slots, 0) == 1 ? 0 : 1;

  // Damaged payload byte.
  Corrupt(slots.SlotPath(newest), 5);
  CheckpointSlots reader(dir + "/state");
  auto read = reader.Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->header.step(), 0);
  EXPECT_EQ(read->payload, Payload(0));

  // The damaged slot is the one overwritten next; the valid one survives.
  ASSERT_TRUE(reader.Write(Header(1), Payload(1)).ok());
  EXPECT_EQ(StepInSlot(reader, newest), 1);
  EXPECT_EQ(StepInSlot(reader, 1 - newest), 0);

  // Torn: only the first part of the newest record reached the disk.
  auto bytes = ReadFile(slots.SlotPath(newest));
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(
      WriteFileAtomically(slots.SlotPath(newest), bytes->substr(0, bytes->size() / 3)).ok());
  read = CheckpointSlots(dir + "/state").Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->header.step(), 0);

  // A damaged header (its digest no longer matches).
  ASSERT_TRUE(WriteFileAtomically(slots.SlotPath(newest), *bytes).ok());
  std::string header_damaged = *bytes;
  header_damaged[13 + 12 + 5] ^= 0x01;  // inside the header
  ASSERT_TRUE(WriteFileAtomically(slots.SlotPath(newest), header_damaged).ok());
  read = CheckpointSlots(dir + "/state").Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->header.step(), 0);
}

TEST(CheckpointSlotsTest, ALeftoverLongerRecordDoesNotMatter) {
  const std::string dir = FreshDir("shrink");
  CheckpointSlots slots(dir + "/state");
  ASSERT_TRUE(slots.Write(Header(0), Payload(0, 50000)).ok());
  ASSERT_TRUE(slots.Write(Header(1), Payload(1, 50000)).ok());
  ASSERT_TRUE(
      slots.Write(Header(2), Payload(2, 1000)).ok());  // over the 50000-byte record of step 0
  auto read = CheckpointSlots(dir + "/state").Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->header.step(), 2);
  EXPECT_EQ(read->payload, Payload(2, 1000));
}

TEST(CheckpointSlotsTest, NoValidSlotIsDataLossNamingBoth) {
  const std::string dir = FreshDir("none-valid");
  CheckpointSlots slots(dir + "/state");
  ASSERT_TRUE(slots.Write(Header(0), Payload(0)).ok());
  ASSERT_TRUE(slots.Write(Header(1), Payload(1)).ok());
  Corrupt(slots.SlotPath(0), 3);
  ASSERT_TRUE(WriteFileAtomically(slots.SlotPath(1), "not a slot").ok());
  const absl::Status status = CheckpointSlots(dir + "/state").Read().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr(slots.SlotPath(0)));
  EXPECT_THAT(status.message(), HasSubstr(slots.SlotPath(1)));
}

// A writer killed at an arbitrary moment (kill -9) in a stream of commits leaves a
// complete checkpoint: the last one written in full or the one being written.
TEST(CheckpointSlotsTest, WriterKilledMidWriteLeavesACompleteCheckpoint) {
  const std::string dir = FreshDir("killed");
  constexpr size_t kSize = 8 << 20;
  std::mt19937 random(std::random_device{}());
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(MakeDirectories(dir).ok());
    KillWriterMidWay(
        [&](const std::function<void()>& ready) {
          CheckpointSlots slots(dir + "/state");
          for (int64_t step = 0;; ++step) {
            if (!slots.Write(Header(step), Payload(step, kSize)).ok()) _exit(1);
            if (step == 1) ready();
          }
        },
        60000, random);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    auto read = CheckpointSlots(dir + "/state").Read();
    ASSERT_TRUE(read.ok()) << "attempt " << attempt << ": " << read.status();
    EXPECT_GE(read->header.step(), 1);
    EXPECT_EQ(read->payload, Payload(read->header.step(), kSize)) << "attempt " << attempt;
  }
}

}  // namespace
}  // namespace vfsynth
