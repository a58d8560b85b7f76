#include "common/base/fnv.h"

#include <gtest/gtest.h>

namespace vfsynth {
namespace {

// The published FNV-1a 64 test vectors (offset basis 14695981039346656037).
TEST(FnvTest, ByteWiseMatchesThePublishedVectors) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(FnvTest, WordWiseTakesWholeWordsThenTheTailByteWise) {
  EXPECT_EQ(Fnv1a64Words("foobar"), Fnv1a64("foobar"));  // shorter than a word: the tail only
  // "abcdefgh" as one little-endian word, then "ij" byte by byte.
  EXPECT_EQ(Fnv1a64Words("abcdefghij"), 0xb7dc09287fb59bcfULL);  // computed independently (Python)
  EXPECT_NE(Fnv1a64Words("abcdefghij"), Fnv1a64("abcdefghij"));
  EXPECT_NE(Fnv1a64Words("abcdefghij"), Fnv1a64Words("abcdefghik"));
}

}  // namespace
}  // namespace vfsynth
