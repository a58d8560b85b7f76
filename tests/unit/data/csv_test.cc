#include "common/data/csv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vfsynth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CsvTest, ParsesQuotingEmbeddedNewlinesAndCrLf) {
  const std::string text =
      "a,b,c\r\n"
      "1,\"x, y\",\"he said \"\"hi\"\"\"\r\n"
      "2,\"multi\nline\",\r\n"
      "\n"
      " 3 , ? ,z\n";
  auto table = ParseCsv(text, "t.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(table->header, ElementsAre("a", "b", "c"));
  ASSERT_EQ(table->rows.size(), 3u);
  EXPECT_THAT(table->rows[0], ElementsAre("1", "x, y", "he said \"hi\""));
  EXPECT_THAT(table->rows[1], ElementsAre("2", "multi\nline", ""));
  EXPECT_THAT(table->rows[2], ElementsAre("3", "?", "z"));
  EXPECT_THAT(table->line_numbers, ElementsAre(2, 3, 6));
}

TEST(CsvTest, WrongFieldCountNamesTheLine) {
  auto table = ParseCsv("a,b\n1,2\n3\n4,5\n", "bad.csv");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(), HasSubstr("bad.csv:3"));
  EXPECT_THAT(table.status().message(), HasSubstr("expected 2 fields, found 1"));
}

TEST(CsvTest, SkipBadRowsCountsThem) {
  CsvReadOptions options;
  options.skip_bad_rows = true;
  auto table = ParseCsv("a,b\n1,2\n3\n4,5,6\n7,8\n", "bad.csv", options);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->skipped_rows, 2);
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_THAT(table->rows[1], ElementsAre("7", "8"));
  EXPECT_THAT(table->line_numbers, ElementsAre(2, 5));
}

TEST(CsvTest, UnterminatedQuoteIsAnError) {
  auto table = ParseCsv("a,b\n1,\"open\n2,3\n", "q.csv");
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(), HasSubstr("never closed"));
}

TEST(CsvTest, GarbageAfterClosingQuoteIsAnError) {
  auto table = ParseCsv("a,b\n\"x\"y,2\n", "q.csv");
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(), HasSubstr("q.csv:2"));
}

TEST(CsvTest, EmptyAndDuplicateHeadersAreErrors) {
  EXPECT_FALSE(ParseCsv("", "e.csv").ok());
  EXPECT_FALSE(ParseCsv("\n\n", "e.csv").ok());
  auto dup = ParseCsv("a,a\n1,2\n", "d.csv");
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(dup.status().message(), HasSubstr("twice"));
}

TEST(CsvTest, FormatThenParseRoundTrips) {
  CsvTable table;
  table.header = {"name", "note", "n"};
  table.rows = {
      {"plain", "", "1"}, {"with,comma", "quote \"q\"", "2"}, {" padded ", "line\nbreak", "?"}};
  auto text = FormatCsv(table);
  ASSERT_TRUE(text.ok());
  auto parsed = ParseCsv(*text, "rt.csv");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->header, table.header);
  EXPECT_EQ(parsed->rows, table.rows);
}

// Found by tests/fuzz/csv_fuzzer: each of these tables came back different (or with a
// row missing) after FormatCsv then ParseCsv.
TEST(CsvTest, RoundTripKeepsFieldsEdgedByAnyAsciiSpace) {
  CsvTable table;
  table.header = {"a", "b"};
  table.rows = {{"\f1", "x\v"}, {"\r", "2"}};
  auto text = FormatCsv(table);
  ASSERT_TRUE(text.ok()) << text.status();
  auto again = ParseCsv(*text, "rt.csv");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->rows, table.rows);
}

TEST(CsvTest, RoundTripKeepsALoneEmptyFieldRow) {
  CsvTable table;
  table.header = {"only"};
  table.rows = {{"x"}, {""}, {"y"}};
  auto text = FormatCsv(table);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "only\nx\n\"\"\ny\n");
  auto again = ParseCsv(*text, "rt.csv");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->rows, table.rows);
  // A really blank line is still no record.
  auto blank = ParseCsv("only\nx\n\n  \ny\n", "blank.csv");
  ASSERT_TRUE(blank.ok()) << blank.status();
  EXPECT_EQ(blank->rows.size(), 2u);
}

TEST(CsvTest, RoundTripKeepsAHeaderThatStartsWithAByteOrderMark) {
  CsvTable table;
  table.header = {"\xEF\xBB\xBFname", "b"};
  table.rows = {{"1", "2"}};
  auto text = FormatCsv(table);
  ASSERT_TRUE(text.ok()) << text.status();
  auto again = ParseCsv(*text, "rt.csv");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->header, table.header);
  // A real BOM in front of the file is still dropped.
  auto bom = ParseCsv("\xEF\xBB\xBFname,b\n1,2\n", "bom.csv");
  ASSERT_TRUE(bom.ok()) << bom.status();
  EXPECT_EQ(bom->header[0], "name");
}

TEST(CsvTest, FormatRejectsRaggedRows) {
  CsvTable table;
  table.header = {"a", "b"};
  table.rows = {{"1"}};
  EXPECT_FALSE(FormatCsv(table).ok());
}

TEST(CsvTest, MissingFileIsNotFound) {
  auto table = ReadCsv("/nonexistent/file.csv");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(table.status().message(), HasSubstr("/nonexistent/file.csv"));
}

// A CSV exported as UTF-16 is named as such instead of failing on its first field.
TEST(CsvTest, AUtf16FileIsNamedWithTheFix) {
  std::string utf16 = "\xFF\xFE";
  for (const char c : std::string("id,a\n1,x\n")) {
    utf16 += c;
    utf16 += '\0';
  }
  const auto table = ParseCsv(utf16, "party.csv");
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(), HasSubstr("party.csv: file is UTF-16; save it as UTF-8"));
}

}  // namespace
}  // namespace vfsynth
