#include "common/util/fnv.h"

#include <gtest/gtest.h>

namespace vfsynth {
namespace {

// The values pin the on-disk formats; computed independently (Python) with the
// project's offset basis 1469598103934665603 (fnv.h).
TEST(FnvTest, ByteWiseKeepsTheLedgersValues) {
  EXPECT_EQ(Fnv1a64(""), 1469598103934665603ULL);
  EXPECT_EQ(Fnv1a64("a"), 0x44bd8ad473cd9906ULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x88fad7c0a8ff07f2ULL);
}

TEST(FnvTest, WordWiseTakesWholeWordsThenTheTailByteWise) {
  EXPECT_EQ(Fnv1a64Words("foobar"), Fnv1a64("foobar"));  // shorter than a word: the tail only
  // "abcdefgh" as one little-endian word, then "ij" byte by byte.
  EXPECT_EQ(Fnv1a64Words("abcdefghij"), 0xf6e58537482762b5ULL);
  EXPECT_NE(Fnv1a64Words("abcdefghij"), Fnv1a64("abcdefghij"));
  EXPECT_NE(Fnv1a64Words("abcdefghij"), Fnv1a64Words("abcdefghik"));
}

}  // namespace
}  // namespace vfsynth
