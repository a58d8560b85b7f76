#include "common/data/numeric_grid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/data/encoder.h"
#include "common/data/schema.h"

namespace vfsynth {
namespace {

v1::Column Numeric(const std::string& type, double min, double max) {
  v1::Column column;
  column.set_name("x");
  column.set_type(type);
  column.set_min(min);
  column.set_max(max);
  return column;
}

void ExpectStrictlyIncreasingWithin(const std::vector<double>& edges, const v1::Column& column) {
  ASSERT_GE(edges.size(), 2u);
  EXPECT_EQ(edges.front(), column.min());
  EXPECT_EQ(edges.back(), column.max());
  for (size_t i = 1; i < edges.size(); ++i) EXPECT_GT(edges[i], edges[i - 1]) << "edge " << i;
}

TEST(NumericGridTest, CellCountFollowsTheRecordCount) {
  EXPECT_EQ(GridCells(0), kMinGridCells);
  EXPECT_EQ(GridCells(614), 16);
  EXPECT_EQ(GridCells(12799), 16);
  EXPECT_EQ(GridCells(12800), 32);  // 400 records per cell
  EXPECT_EQ(GridCells(26049), kMaxGridCells);
  EXPECT_EQ(GridCells(int64_t{1} << 40), kMaxGridCells);
}

TEST(NumericGridTest, SmallIntegerRangeGetsOneBinPerValue) {
  const v1::Column column = Numeric("integer", 1, 16);
  const std::vector<double> edges = NumericGridEdges(column, 16);
  ExpectStrictlyIncreasingWithin(edges, column);
  EXPECT_EQ(edges.size(), 17u);  // 16 values
  EXPECT_LE(NumericGridEdges(Numeric("integer", 1, 17), 16).size(),
            17u);  // 17 values: the general grid
  EXPECT_EQ(NumericGridEdges(Numeric("integer", 1, 32), 32).size(), 33u);  // 32 values
}

TEST(NumericGridTest, MoreCellsRefineTheGrid) {
  for (const v1::Column& column : {Numeric("integer", 0, 99999), Numeric("continuous", -2, 2)}) {
    const std::vector<double> coarse = NumericGridEdges(column, 16);
    const std::vector<double> fine = NumericGridEdges(column, 32);
    ExpectStrictlyIncreasingWithin(fine, column);
    EXPECT_GT(fine.size(), coarse.size());
    EXPECT_LE(static_cast<int>(fine.size()) - 1, 32);
    for (double edge : coarse) {  // every coarse edge stays an edge
      EXPECT_NE(std::find(fine.begin(), fine.end(), edge), fine.end()) << edge;
    }
  }
}

TEST(NumericGridTest, HeavyTailedAmountGetsResolutionNearZeroAndAcrossTheRange) {
  const v1::Column column = Numeric("integer", 0, 99999);
  const std::vector<double> edges = NumericGridEdges(column, 16);
  ExpectStrictlyIncreasingWithin(edges, column);
  EXPECT_LE(static_cast<int>(edges.size()) - 1, 16);
  EXPECT_LE(edges[1], 10);  // the first geometric edge, four decades below max
  int below_thousand = 0;
  for (double edge : edges) {
    below_thousand += edge < 1000;
    EXPECT_EQ(edge, std::round(edge));  // integer edges
  }
  EXPECT_GE(below_thousand, 4);
  EXPECT_GE(edges[edges.size() - 2], 80000);  // the equal-width cells reach the top
}

TEST(NumericGridTest, ColumnsWithNegativeValuesGetEqualWidthCells) {
  const v1::Column column = Numeric("continuous", -2, 2);
  const std::vector<double> edges = NumericGridEdges(column, 16);
  ExpectStrictlyIncreasingWithin(edges, column);
  EXPECT_EQ(static_cast<int>(edges.size()) - 1, 8);
  EXPECT_DOUBLE_EQ(edges[1] - edges[0], 0.5);
}

TEST(NumericGridTest, IntegerBoundsBeyondExactDoublesStillGiveIncreasingEdges) {
  for (const v1::Column& column :
       {Numeric("integer", 1e16, 1e16 + 4), Numeric("integer", -1e16 - 4, -1e16)}) {
    ExpectStrictlyIncreasingWithin(NumericGridEdges(column, kMaxGridCells), column);
  }
}

TEST(NumericGridTest, SchemasGetTheGridUnlessBinsOrScalarAreDeclared) {
  auto schema = ParseSchema(R"({"columns":[
      {"name":"amount","type":"continuous","min":0,"max":5000},
      {"name":"children","type":"integer","min":0,"max":5},
      {"name":"ratio","type":"continuous","min":0,"max":1,"encoding":"scalar"},
      {"name":"age","type":"integer","min":17,"max":90,"bins":[17,30,90]}]})",
                            "s.json");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->columns(0).bins_size(), 0);  // parsing keeps the schema as written
  ResolveNumericGrids(1000, &*schema);
  EXPECT_GT(schema->columns(0).bins_size(), 8);
  EXPECT_TRUE(schema->columns(0).within_bin());
  EXPECT_EQ(schema->columns(1).bins_size(), 7);  // 6 values
  EXPECT_FALSE(schema->columns(1).within_bin());
  EXPECT_EQ(schema->columns(2).bins_size(), 0);
  EXPECT_EQ(schema->columns(3).bins_size(), 3);
  EXPECT_FALSE(schema->columns(3).within_bin());

  v1::Schema again = *schema;
  ResolveNumericGrids(100000, &again);
  EXPECT_EQ(again.SerializeAsString(), schema->SerializeAsString());
}

TEST(NumericGridTest, EveryIntegerValueRoundTripsThroughItsBin) {
  auto schema = ParseSchema(R"({"columns":[
      {"name":"children","type":"integer","min":0,"max":5},
      {"name":"amount","type":"integer","min":0,"max":99999}]})",
                            "s.json");
  ASSERT_TRUE(schema.ok()) << schema.status();
  ResolveNumericGrids(1000, &*schema);
  auto encoder = TableEncoder::Create(*schema);
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  CsvTable table;
  table.header = {"children", "amount"};
  for (int value : {0, 1, 2, 3, 4, 5}) {
    table.rows.push_back({std::to_string(value), std::to_string(value * 19997)});
  }
  auto encoded = encoder->Encode(table, "t.csv");
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  const CsvTable decoded = encoder->Decode(encoded->table.values.data(), encoded->table.rows);
  for (size_t i = 0; i < table.rows.size(); ++i) {
    EXPECT_EQ(decoded.rows[i][0], table.rows[i][0]);
    EXPECT_NEAR(std::stod(decoded.rows[i][1]), std::stod(table.rows[i][1]), 1.0) << "row " << i;
  }
}

TEST(NumericGridTest, UnknownOrConflictingEncodingsAreRefused) {
  EXPECT_FALSE(
      ParseSchema(
          R"({"columns":[{"name":"a","type":"continuous","min":0,"max":1,"encoding":"log"}]})",
          "s.json")
          .ok());
  EXPECT_FALSE(
      ParseSchema(
          R"({"columns":[{"name":"a","type":"continuous","min":0,"max":1,"bins":[0,1],"encoding":"scalar"}]})",
          "s.json")
          .ok());
  EXPECT_FALSE(
      ParseSchema(
          R"({"columns":[{"name":"a","type":"categorical","categories":["x"],"encoding":"grid"}]})",
          "s.json")
          .ok());
}

}  // namespace
}  // namespace vfsynth
