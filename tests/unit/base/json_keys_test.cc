// Duplicate JSON keys and text that is not UTF-8: found before protobuf's parser, which
// keeps the last of two keys silently and names no encoding.
#include "common/base/json_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/base/text_encoding.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

TEST(JsonKeysTest, ASecondBlockAtTopLevelIsFoundWithBothLines) {
  const auto duplicate = FindDuplicateJsonKey(
      "{\n  \"privacy\": {\"mode\": \"strict\"},\n  \"run_id\": \"r\",\n"
      "  \"privacy\": {\"mode\": \"none\"}\n}\n");
  ASSERT_TRUE(duplicate.has_value());
  EXPECT_EQ(duplicate->path, "privacy");
  EXPECT_EQ(duplicate->line, 4);
  EXPECT_EQ(duplicate->first_line, 2);
}

TEST(JsonKeysTest, NestedKeysAreNamedByTheirPath) {
  const auto duplicate = FindDuplicateJsonKey(R"({"training": {"rounds": 1, "rounds": 2}})");
  ASSERT_TRUE(duplicate.has_value());
  EXPECT_EQ(duplicate->path, "training.rounds");
}

TEST(JsonKeysTest, KeysInArraysOfObjectsAreCheckedPerObject) {
  EXPECT_FALSE(FindDuplicateJsonKey(R"({"parties": [{"name": "a"}, {"name": "b"}]})"));
  const auto duplicate =
      FindDuplicateJsonKey(R"({"parties": [{"name": "a"}, {"name": "b", "name": "c"}]})");
  ASSERT_TRUE(duplicate.has_value());
  EXPECT_EQ(duplicate->path, "parties[1].name");
}

TEST(JsonKeysTest, QuotesInsideStringsAreNotKeys) {
  EXPECT_FALSE(FindDuplicateJsonKey(R"({"a": "x\", \"a\": \"y", "b": "\\"})"));
  const auto duplicate = FindDuplicateJsonKey(R"({"a\"b": 1, "a\"b": 2})");
  ASSERT_TRUE(duplicate.has_value());
  EXPECT_EQ(duplicate->path, "a\"b");
}

// protobuf takes "run_id" and "runId" for the same field.
TEST(JsonKeysTest, CamelAndSnakeSpellingsAreOneKey) {
  const auto duplicate = FindDuplicateJsonKey(R"({"run_id": "a", "runId": "b"})");
  ASSERT_TRUE(duplicate.has_value());
  EXPECT_EQ(duplicate->path, "runId");
}

TEST(JsonKeysTest, MalformedTextIsLeftToTheParser) {
  EXPECT_FALSE(FindDuplicateJsonKey(R"({"a": 1, )"));
  EXPECT_FALSE(FindDuplicateJsonKey(""));
  EXPECT_FALSE(FindDuplicateJsonKey(std::string(100000, '[')));
}

TEST(TextEncodingTest, Utf16AndUtf32AreNamedWithTheFix) {
  const std::string utf16_bom("\xFF\xFE{\0\"\0", 6);
  const std::string utf16_le("{\0\"\0a\0\"\0", 8);
  const std::string utf16_be(std::string("\0{\0\"", 4));
  const std::string utf32_le("{\0\0\0\"\0\0\0", 8);
  for (const std::string& text : {utf16_bom, utf16_le, utf16_be}) {
    EXPECT_THAT(CheckUtf8Text(text, "c.json").message(),
                HasSubstr("c.json: file is UTF-16; save it as UTF-8"));
  }
  EXPECT_THAT(CheckUtf8Text(utf32_le, "c.json").message(), HasSubstr("file is UTF-32"));
  EXPECT_THAT(CheckUtf8Text(std::string("a,b\n1,\0\0", 8), "t.csv").message(),
              HasSubstr("a NUL byte at offset 6"));
  EXPECT_TRUE(CheckUtf8Text("\xEF\xBB\xBF{\"name\": \"caf\xC3\xA9\"}", "c.json").ok());
  // Bytes that look like a mark but carry no zero byte read back as they were written.
  EXPECT_TRUE(CheckUtf8Text("\xFF\xFE\xFF\x15,a\n", "t.csv").ok());
}

}  // namespace
}  // namespace vfsynth
