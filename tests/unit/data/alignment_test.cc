#include "common/data/alignment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace vfsynth {
namespace {

using ::testing::ElementsAre;

TEST(AlignmentTest, TokenIsHmacSha256) {
  // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
  EXPECT_EQ(AlignmentToken("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(AlignmentTest, DifferentKeysGiveUnlinkableTokens) {
  EXPECT_NE(AlignmentToken("k1", "42"), AlignmentToken("k2", "42"));
}

TEST(AlignmentTest, IntersectsAndOrdersCanonically) {
  const std::string key = "shared";
  auto a = AlignmentTokens(key, {"1", "2", "3", "4"});
  auto b = AlignmentTokens(key, {"4", "3", "9", "1"});
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<std::string> common = IntersectTokens({*a, *b});
  ASSERT_EQ(common.size(), 3u);
  EXPECT_TRUE(std::is_sorted(common.begin(), common.end()));
  auto order_a = RowOrder(*a, common);
  auto order_b = RowOrder(*b, common);
  ASSERT_TRUE(order_a.ok() && order_b.ok());
  // Both parties end up with the same record at each position.
  const std::vector<std::string> ids_a = {"1", "2", "3", "4"};
  const std::vector<std::string> ids_b = {"4", "3", "9", "1"};
  for (size_t i = 0; i < common.size(); ++i) {
    EXPECT_EQ(ids_a[(*order_a)[i]], ids_b[(*order_b)[i]]);
  }
}

TEST(AlignmentTest, DuplicateIdsAndForeignTokensAreErrors) {
  EXPECT_FALSE(AlignmentTokens("k", {"1", "1"}).ok());
  EXPECT_FALSE(RowOrder({"aa"}, {"bb"}).ok());
}

TEST(AlignmentTest, EmptyIntersection) {
  EXPECT_THAT(IntersectTokens({{"a"}, {"b"}}), ElementsAre());
  EXPECT_THAT(IntersectTokens({}), ElementsAre());
}

}  // namespace
}  // namespace vfsynth
