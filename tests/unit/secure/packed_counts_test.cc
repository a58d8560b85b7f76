#include "common/secure/packed_counts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace vfsynth::secure {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SlotLayoutTest, SixtySlotsOfThirtyFourBitsFitA2048BitModulus) {
  auto layout = SlotLayout::Create({2, 5, 70}, 2048);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->slots_per_ciphertext(), 60);
  EXPECT_EQ(layout->num_slots(), 77);
  EXPECT_EQ(layout->num_ciphertexts(), 2);
  EXPECT_EQ(layout->slots_in(1), 17);
  EXPECT_EQ(layout->offset(2), 7);
  EXPECT_FALSE(SlotLayout::Create({2, 0}, 2048).ok());
  EXPECT_FALSE(SlotLayout::Create({2}, 1024).ok());
}

TEST(PackedCountsTest, RecordOneHotUnpacksToItsSlots) {
  auto layout = SlotLayout::Create({2, 5, 70}, 2048);
  ASSERT_TRUE(layout.ok());
  auto plaintexts = PackRecord(*layout, std::vector<int32_t>{1, 4, 69});
  ASSERT_TRUE(plaintexts.ok()) << plaintexts.status();
  auto slots = UnpackSlots(*layout, *plaintexts, 0, 0, 1);
  ASSERT_TRUE(slots.ok()) << slots.status();
  std::vector<int64_t> expected(77, 0);
  expected[1] = expected[2 + 4] = expected[7 + 69] = 1;
  EXPECT_EQ(*slots, expected);
  EXPECT_THAT(PackRecord(*layout, std::vector<int32_t>{2, 0, 0}).status().message(),
              HasSubstr("column 0 value 2 outside [0, 2)"));
}

TEST(PackedCountsTest, FullWidthSlotValuesRoundTripAndOutOfRangeIsRefused) {
  auto layout = SlotLayout::Create({3}, 2048);
  ASSERT_TRUE(layout.ok());
  const int64_t top = (int64_t{1} << kSlotBits) - 1;
  auto plaintexts = PackSlots(*layout, std::vector<int64_t>{top, 0, kSlotOffset + 5});
  ASSERT_TRUE(plaintexts.ok());
  EXPECT_THAT(*UnpackSlots(*layout, *plaintexts, kSlotOffset, -kSlotOffset, top),
              ElementsAre(top - kSlotOffset, -kSlotOffset, 5));
  EXPECT_THAT(UnpackSlots(*layout, *plaintexts, kSlotOffset, -10, 10).status().message(),
              HasSubstr("outside the possible"));
  EXPECT_FALSE(PackSlots(*layout, std::vector<int64_t>{top + 1, 0, 0}).ok());
  EXPECT_FALSE(PackSlots(*layout, std::vector<int64_t>{-1, 0, 0}).ok());
}

}  // namespace
}  // namespace vfsynth::secure
