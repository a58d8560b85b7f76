// The party's reply journal: durable appends, replay after a restart, a torn last
// record dropped, other damage refused, and old rounds forgotten (the file compacted
// once the forgotten records add up).
#include "client/core/reply_journal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/base/file_io.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

v1::JournalEntry Entry(int64_t round, int64_t step, const std::string& reply) {
  v1::JournalEntry entry;
  entry.set_round(round);
  entry.set_step(step);
  entry.set_payload(10);
  entry.set_input_digest("digest-" + std::to_string(step));
  entry.set_reply(reply);
  return entry;
}

std::string Path(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/reply_journal_" + name;
  std::filesystem::remove(path);
  return path;
}

TEST(ReplyJournalTest, EntriesSurviveAReopen) {
  const std::string path = Path("reopen");
  {
    auto journal = ReplyJournal::Open(path);
    ASSERT_TRUE(journal.ok()) << journal.status();
    ASSERT_TRUE((*journal)->Append(Entry(0, 0, "first")).ok());
    ASSERT_TRUE((*journal)->Append(Entry(0, 1, std::string("second\0bytes", 12))).ok());
  }
  auto journal = ReplyJournal::Open(path);
  ASSERT_TRUE(journal.ok()) << journal.status();
  EXPECT_EQ((*journal)->size(), 2u);
  ASSERT_NE((*journal)->Find(10, 0, 1), nullptr);
  EXPECT_EQ((*journal)->Find(10, 0, 1)->reply(), std::string("second\0bytes", 12));
  EXPECT_EQ((*journal)->Find(10, 0, 1)->input_digest(), "digest-1");
  EXPECT_EQ((*journal)->Find(11, 0, 1), nullptr);  // another payload
  EXPECT_EQ((*journal)->Find(10, 1, 1), nullptr);
}

TEST(ReplyJournalTest, TornLastRecordIsDroppedAndAppendsContinue) {
  const std::string path = Path("torn");
  {
    auto journal = ReplyJournal::Open(path);
    ASSERT_TRUE(journal.ok());
    ASSERT_TRUE((*journal)->Append(Entry(0, 0, "kept")).ok());
    ASSERT_TRUE((*journal)->Append(Entry(0, 1, "torn away")).ok());
  }
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(
      WriteFileAtomically(path, bytes->substr(0, bytes->size() - 3)).ok());  // crash mid-append
  {
    auto journal = ReplyJournal::Open(path);
    ASSERT_TRUE(journal.ok()) << journal.status();
    EXPECT_EQ((*journal)->size(), 1u);
    EXPECT_EQ((*journal)->Find(10, 0, 1), nullptr);
    ASSERT_TRUE((*journal)->Append(Entry(0, 1, "again")).ok());
  }
  auto journal = ReplyJournal::Open(path);
  ASSERT_TRUE(journal.ok()) << journal.status();
  ASSERT_NE((*journal)->Find(10, 0, 1), nullptr);
  EXPECT_EQ((*journal)->Find(10, 0, 1)->reply(), "again");
}

TEST(ReplyJournalTest, DamageBeforeTheLastRecordIsDataLoss) {
  const std::string path = Path("damaged");
  {
    auto journal = ReplyJournal::Open(path);
    ASSERT_TRUE(journal.ok());
    ASSERT_TRUE((*journal)->Append(Entry(0, 0, "first record")).ok());
    ASSERT_TRUE((*journal)->Append(Entry(0, 1, "second record")).ok());
  }
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  std::string damaged = *bytes;
  damaged[std::string("VFSYNTH-JOURNAL 1\n").size() + 14] ^=
      0x20;  // inside the first record's bytes
  ASSERT_TRUE(WriteFileAtomically(path, damaged).ok());
  const absl::Status status = ReplyJournal::Open(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("damaged"));
}

TEST(ReplyJournalTest, ANewJournalStartsWithItsFormatHeader) {
  const std::string path = Path("header");
  ASSERT_TRUE(ReplyJournal::Open(path).ok());
  EXPECT_EQ(ReadFile(path).value(), "VFSYNTH-JOURNAL 1\n");
  ASSERT_TRUE(ReplyJournal::Open(path).value()->Append(Entry(0, 0, "one")).ok());
  auto journal = ReplyJournal::Open(path);
  ASSERT_TRUE(journal.ok()) << journal.status();
  EXPECT_EQ((*journal)->size(), 1u);
  EXPECT_EQ(ReadFile(path).value().rfind("VFSYNTH-JOURNAL 1\n", 0), 0u);  // one header, still first
}

TEST(ReplyJournalTest, APartHeaderLeftByACrashAtCreationIsANewJournal) {
  const std::string path = Path("part_header");
  ASSERT_TRUE(WriteFileAtomically(path, "VFSYNTH-JOU").ok());
  auto journal = ReplyJournal::Open(path);
  ASSERT_TRUE(journal.ok()) << journal.status();
  EXPECT_EQ((*journal)->size(), 0u);
  EXPECT_EQ(ReadFile(path).value(), "VFSYNTH-JOURNAL 1\n");
}

TEST(ReplyJournalTest, AnotherFormatVersionOrAnotherFileIsRefused) {
  const std::string path = Path("version");
  ASSERT_TRUE(WriteFileAtomically(path, "VFSYNTH-JOURNAL 7\nrecords").ok());
  absl::Status status = ReplyJournal::Open(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(path), HasSubstr("format version 7"), HasSubstr("reads version 1")));
  EXPECT_EQ(ReadFile(path).value(), "VFSYNTH-JOURNAL 7\nrecords");  // left as it was

  ASSERT_TRUE(
      WriteFileAtomically(path, std::string(40, '\x01')).ok());  // e.g. frames without a header
  status = ReplyJournal::Open(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("is not a vfsynth reply journal"));
}

TEST(ReplyJournalTest, DropBeforeForgetsOldRoundsDurablyWhenItCompacts) {
  const std::string path = Path("drop");
  {
    auto journal = ReplyJournal::Open(path, /*compact_bytes=*/0);  // every drop compacts
    ASSERT_TRUE(journal.ok());
    for (int64_t round = 0; round < 3; ++round)
      ASSERT_TRUE((*journal)->Append(Entry(round, round, "r")).ok());
    ASSERT_TRUE((*journal)->DropBefore(2).ok());
    EXPECT_EQ((*journal)->size(), 1u);
    ASSERT_TRUE((*journal)->Append(Entry(3, 3, "after")).ok());  // appends go to the rewritten file
    ASSERT_TRUE((*journal)->DropBefore(1).ok());                 // nothing that old: no-op
  }
  auto journal = ReplyJournal::Open(path);
  ASSERT_TRUE(journal.ok()) << journal.status();
  EXPECT_EQ((*journal)->size(), 2u);
  EXPECT_EQ((*journal)->Find(10, 1, 1), nullptr);
  EXPECT_NE((*journal)->Find(10, 2, 2), nullptr);
  EXPECT_NE((*journal)->Find(10, 3, 3), nullptr);
}

TEST(ReplyJournalTest, DroppedRecordsStayInTheFileUntilTheyReachTheCompactionSize) {
  const std::string reply(1000, 'x');
  // The sizes of the header and of one record: rounds 1 to 5 encode alike.
  size_t header = 0;
  size_t record = 0;
  {
    const std::string probe = Path("record");
    auto journal = ReplyJournal::Open(probe);
    ASSERT_TRUE(journal.ok());
    header = std::filesystem::file_size(probe);
    ASSERT_TRUE((*journal)->Append(Entry(1, 1, reply)).ok());
    record = std::filesystem::file_size(probe) - header;
  }
  ASSERT_GT(record, 1000u);
  const std::string path = Path("lazy");
  {
    // Three dropped records compact the file, two do not.
    auto journal = ReplyJournal::Open(path, 3 * record);
    ASSERT_TRUE(journal.ok()) << journal.status();
    for (int64_t round = 1; round <= 4; ++round)
      ASSERT_TRUE((*journal)->Append(Entry(round, round, reply)).ok());
    ASSERT_TRUE((*journal)->DropBefore(3).ok());
    EXPECT_EQ((*journal)->size(), 2u);
    EXPECT_EQ((*journal)->Find(10, 1, 1), nullptr);                    // forgotten at once
    EXPECT_EQ(std::filesystem::file_size(path), header + 4 * record);  // but not rewritten
  }
  {
    // A reopen loads the dropped records again; the next drop forgets them again and,
    // with a third dropped record, compacts.
    auto journal = ReplyJournal::Open(path, 3 * record);
    ASSERT_TRUE(journal.ok()) << journal.status();
    EXPECT_EQ((*journal)->size(), 4u);
    ASSERT_TRUE((*journal)->DropBefore(3).ok());
    EXPECT_EQ(std::filesystem::file_size(path), header + 4 * record);  // two dropped: not yet
    ASSERT_TRUE((*journal)->DropBefore(4).ok());
    EXPECT_EQ(std::filesystem::file_size(path), header + record);  // three: round 4 alone is kept
    ASSERT_TRUE((*journal)->Append(Entry(5, 5, reply)).ok());      // appends go to the new file
  }
  auto journal = ReplyJournal::Open(path);
  ASSERT_TRUE(journal.ok()) << journal.status();
  EXPECT_EQ((*journal)->size(), 2u);
  EXPECT_NE((*journal)->Find(10, 4, 4), nullptr);
  EXPECT_NE((*journal)->Find(10, 5, 5), nullptr);
}

}  // namespace
}  // namespace vfsynth
