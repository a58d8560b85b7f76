// ReorderRows: a party keeps its aligned rows, in the aligned order, permuting its encoded
// table in place.
#include <gtest/gtest.h>

#include <numeric>

#include "common/data/party_data.h"

namespace vfsynth {
namespace {

// `rows` rows of width 2: row r holds (10 r, 10 r + 1), id "r<r>", user "u<r>".
PartyData Rows(int rows) {
  PartyData data;
  data.encoded.rows = rows;
  data.encoded.width = 2;
  for (int r = 0; r < rows; ++r) {
    data.encoded.values.push_back(10.0f * r);
    data.encoded.values.push_back(10.0f * r + 1);
    data.ids.push_back("r" + std::to_string(r));
    data.users.push_back("u" + std::to_string(r));
  }
  return data;
}

void ExpectRows(const PartyData& data, const std::vector<int64_t>& order) {
  ASSERT_EQ(data.encoded.rows, static_cast<int64_t>(order.size()));
  ASSERT_EQ(data.encoded.values.size(), order.size() * 2);
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(data.encoded.values[2 * i], 10.0f * order[i]) << i;
    EXPECT_EQ(data.encoded.values[2 * i + 1], 10.0f * order[i] + 1) << i;
    EXPECT_EQ(data.ids[i], "r" + std::to_string(order[i]));
    EXPECT_EQ(data.users[i], "u" + std::to_string(order[i]));
  }
}

TEST(ReorderRowsTest, KeepsTheListedRowsInTheirOrderAndDropsTheRest) {
  PartyData data = Rows(7);
  const std::vector<int64_t> order = {5, 0, 3, 6};
  ReorderRows(order, &data);
  ExpectRows(data, order);
}

TEST(ReorderRowsTest, APermutationWithSeveralCyclesAndFixedRows) {
  PartyData data = Rows(8);
  // Cycles (0 2 4), (1 3), fixed 5 and 7, and 6 swapped with nothing.
  const std::vector<int64_t> order = {2, 3, 4, 1, 0, 5, 6, 7};
  ReorderRows(order, &data);
  ExpectRows(data, order);
}

TEST(ReorderRowsTest, AReversedLargeTable) {
  PartyData data = Rows(1000);
  std::vector<int64_t> order(1000);
  std::iota(order.rbegin(), order.rend(), 0);
  order.resize(600);
  ReorderRows(order, &data);
  ExpectRows(data, order);
}

}  // namespace
}  // namespace vfsynth
