#include "common/data/encoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/numbers.h"
#include "common/data/csv.h"
#include "common/data/numeric_grid.h"
#include "common/data/schema.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

v1::Schema MixedSchema() {
  auto schema = ParseSchema(R"({"columns":[
      {"name":"color","type":"categorical","categories":["red","green","blue"],"nullable":true},
      {"name":"size","type":"continuous","min":-2,"max":6},
      {"name":"count","type":"integer","min":0,"max":100,"nullable":true},
      {"name":"score","type":"continuous","min":0,"max":10,"bins":[0,2.5,5,10]}]})",
                            "mixed.json");
  EXPECT_TRUE(schema.ok()) << schema.status();
  return *schema;
}

TEST(EncoderTest, LayoutFollowsSchema) {
  auto encoder = TableEncoder::Create(MixedSchema());
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  // color 3+1, size 1, count 1 + missing 2, score 3 bins.
  EXPECT_EQ(encoder->width(), 4 + 1 + 3 + 3);
  ASSERT_EQ(encoder->blocks().size(), 5u);
  EXPECT_EQ(encoder->blocks()[0].kind, BlockKind::kSoftmax);
  EXPECT_EQ(encoder->blocks()[1].kind, BlockKind::kTanh);
  EXPECT_EQ(encoder->blocks()[2].kind, BlockKind::kTanh);
  EXPECT_EQ(encoder->blocks()[3].width, 2);
  EXPECT_EQ(encoder->blocks()[4].offset, 8);
  EXPECT_EQ(encoder->blocks()[4].width, 3);
}

TEST(EncoderTest, EncodesKnownValues) {
  auto encoder = TableEncoder::Create(MixedSchema());
  ASSERT_TRUE(encoder.ok());
  CsvTable table;
  table.header = {"id", "score", "count", "size", "color"};  // order differs from schema
  table.rows = {{"7", "6", "?", "2", "green"}};
  table.line_numbers = {2};
  auto result = encoder->Encode(table, "t.csv");
  ASSERT_TRUE(result.ok()) << result.status();
  const std::vector<float> expected = {0, 1, 0, 0,  // green
                                       0,           // size 2 in [-2, 6] -> 0
                                       0, 0, 1,     // count missing
                                       0, 0, 1};    // score 6 in bin [5, 10]
  EXPECT_EQ(result->table.values, expected);
}

TEST(EncoderTest, DecodeInvertsEncode) {
  auto encoder = TableEncoder::Create(MixedSchema());
  ASSERT_TRUE(encoder.ok());
  CsvTable table;
  table.header = {"color", "size", "count", "score"};
  table.rows = {{"red", "-2", "0", "0"},
                {"blue", "5.123456", "100", "3"},
                {"?", "0.5", "?", "9.9"},
                {"green", "6", "42", "10"}};
  table.line_numbers = {2, 3, 4, 5};
  auto result = encoder->Encode(table, "t.csv");
  ASSERT_TRUE(result.ok()) << result.status();
  const CsvTable decoded = encoder->Decode(result->table.values.data(), result->table.rows);
  ASSERT_EQ(decoded.header, table.header);
  const std::vector<std::string> score_midpoints = {"1.25", "3.75", "7.5", "7.5"};
  for (size_t r = 0; r < table.rows.size(); ++r) {
    EXPECT_EQ(decoded.rows[r][0], table.rows[r][0]) << "row " << r;  // categorical: exact
    double in = 0, out = 0;
    ASSERT_TRUE(absl::SimpleAtod(table.rows[r][1], &in));
    ASSERT_TRUE(absl::SimpleAtod(decoded.rows[r][1], &out));
    EXPECT_NEAR(out, in, 8 * 1e-6) << "row " << r;  // float32 scaling over a range of 8
    EXPECT_EQ(decoded.rows[r][2], table.rows[r][2]) << "row " << r;    // integer: exact
    EXPECT_EQ(decoded.rows[r][3], score_midpoints[r]) << "row " << r;  // bin midpoint
  }
}

TEST(EncoderTest, ClipsOutOfBoundsAndCounts) {
  auto encoder = TableEncoder::Create(MixedSchema());
  ASSERT_TRUE(encoder.ok());
  CsvTable table;
  table.header = {"color", "size", "count", "score"};
  table.rows = {{"red", "100", "-5", "11"}};
  table.line_numbers = {2};
  auto result = encoder->Encode(table, "t.csv");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->clipped_values, (std::vector<int64_t>{0, 1, 1, 1}));
  const CsvTable decoded = encoder->Decode(result->table.values.data(), 1);
  EXPECT_EQ(decoded.rows[0][1], "6");
  EXPECT_EQ(decoded.rows[0][2], "0");
}

struct BadValueCase {
  std::vector<std::string> row;
  const char* message;
};

class BadValueTest : public ::testing::TestWithParam<BadValueCase> {};

TEST_P(BadValueTest, ErrorNamesLineAndColumnOrSkips) {
  auto encoder = TableEncoder::Create(MixedSchema());
  ASSERT_TRUE(encoder.ok());
  CsvTable table;
  table.header = {"color", "size", "count", "score"};
  table.rows = {{"red", "1", "1", "1"}, GetParam().row};
  table.line_numbers = {2, 9};
  auto result = encoder->Encode(table, "t.csv");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("t.csv:9"));
  EXPECT_THAT(result.status().message(), HasSubstr(GetParam().message));

  EncodeOptions skip;
  skip.skip_bad_rows = true;
  auto skipped = encoder->Encode(table, "t.csv", skip);
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_EQ(skipped->skipped_rows, 1);
  EXPECT_EQ(skipped->table.rows, 1);
  EXPECT_EQ(skipped->kept_rows, (std::vector<int64_t>{0}));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadValueTest,
    ::testing::Values(BadValueCase{{"purple", "1", "1", "1"}, "column 'color': value 'purple'"},
                      BadValueCase{{"red", "abc", "1", "1"}, "column 'size'"},
                      BadValueCase{{"red", "nan", "1", "1"}, "not a finite number"},
                      BadValueCase{{"red", "", "1", "1"}, "not declared nullable"},
                      BadValueCase{{"red", "1", "2.5", "1"}, "not an integer"}));

// A malformed field may be megabytes long: the error shows its start and its length.
TEST(EncoderTest, ALongBadValueIsCutInTheError) {
  auto encoder = TableEncoder::Create(MixedSchema());
  ASSERT_TRUE(encoder.ok());
  CsvTable table;
  table.header = {"color", "size", "count", "score"};
  table.rows = {{std::string(1 << 20, 'x'), "1", "1", "1"}};
  table.line_numbers = {2};
  auto result = encoder->Encode(table, "t.csv");
  ASSERT_FALSE(result.ok());
  EXPECT_LT(result.status().message().size(), 300u);
  EXPECT_THAT(result.status().message(),
              HasSubstr("...' (1048576 bytes) is not one of the schema's categories"));
}

TEST(EncoderTest, MissingSchemaColumnIsAnError) {
  auto encoder = TableEncoder::Create(MixedSchema());
  ASSERT_TRUE(encoder.ok());
  CsvTable table;
  table.header = {"color", "size", "count"};
  auto result = encoder->Encode(table, "t.csv");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("'score'"));
}

class AdultSchemaTest : public ::testing::TestWithParam<bool> {};

// The shipped Adult schema as written (min-max scalars) and as a party trains on it
// (numeric grids with within-bin positions).
TEST_P(AdultSchemaTest, AdultRoundTripsExactly) {
  auto schema = LoadSchema(std::string(VFSYNTH_SOURCE_DIR) + "/deploy/schemas/adult.schema.json");
  ASSERT_TRUE(schema.ok()) << schema.status();
  if (GetParam()) ResolveNumericGrids(1000, &*schema);
  auto table = ReadCsv(std::string(VFSYNTH_DATASETS_DIR) + "/adult.csv");
  ASSERT_TRUE(table.ok()) << table.status();
  auto encoder = TableEncoder::Create(*schema);
  ASSERT_TRUE(encoder.ok());
  auto result = encoder->Encode(*table, "adult.csv");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->table.rows, 32561);
  const CsvTable decoded = encoder->Decode(result->table.values.data(), result->table.rows);
  // Every Adult column is categorical or an integer, so decoding is exact.
  for (size_t r = 0; r < table->rows.size(); ++r) {
    ASSERT_EQ(decoded.rows[r], table->rows[r]) << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, AdultSchemaTest, ::testing::Bool());

// The wine tables over their numeric grids (bins with a within-bin position): every
// value comes back within float precision of itself.
TEST(WineGridTest, WineRoundTripsThroughItsBins) {
  auto schema = LoadSchema(std::string(VFSYNTH_SOURCE_DIR) + "/deploy/schemas/wine.schema.json");
  ASSERT_TRUE(schema.ok()) << schema.status();
  ResolveNumericGrids(1000, &*schema);
  auto encoder = TableEncoder::Create(*schema);
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  for (const char* file : {"winequality-red.csv", "winequality-white.csv"}) {
    auto table = ReadCsv(std::string(VFSYNTH_DATASETS_DIR) + "/" + file);
    ASSERT_TRUE(table.ok()) << table.status();
    auto result = encoder->Encode(*table, file);
    ASSERT_TRUE(result.ok()) << result.status();
    const CsvTable decoded = encoder->Decode(result->table.values.data(), result->table.rows);
    ASSERT_EQ(decoded.rows.size(), table->rows.size());
    for (const v1::Column& column : schema->columns()) {
      const int real_at = table->ColumnIndex(column.name());
      const int back_at = decoded.ColumnIndex(column.name());
      ASSERT_GE(real_at, 0) << column.name();
      ASSERT_GE(back_at, 0) << column.name();
      for (size_t r = 0; r < table->rows.size(); ++r) {
        if (column.type() == "categorical") {
          ASSERT_EQ(decoded.rows[r][back_at], table->rows[r][real_at]) << file << " row " << r;
          continue;
        }
        double real = 0, back = 0;
        ASSERT_TRUE(absl::SimpleAtod(table->rows[r][real_at], &real));
        ASSERT_TRUE(absl::SimpleAtod(decoded.rows[r][back_at], &back)) << decoded.rows[r][back_at];
        ASSERT_NEAR(back, real, 1e-4 * (column.max() - column.min()))
            << file << " " << column.name() << " row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace vfsynth

namespace vfsynth {
namespace {

// Declared bins as the modes of a mixed encoding: bin one-hot + position in the bin.
v1::Schema WithinBinSchema() {
  auto schema = ParseSchema(R"({"columns":[
      {"name":"gain","type":"integer","min":0,"max":99999,"bins":[0,1,2000,99999],"within_bin":true},
      {"name":"rate","type":"continuous","min":0,"max":1,"bins":[0,0.5,1],"within_bin":true}]})",
                            "within.json");
  EXPECT_TRUE(schema.ok()) << schema.status();
  return *schema;
}

TEST(EncoderTest, WithinBinEncodesBinAndPosition) {
  auto encoder = TableEncoder::Create(WithinBinSchema());
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  // gain: 3 bins + position; rate: 2 bins + position.
  ASSERT_EQ(encoder->width(), 4 + 3);
  ASSERT_EQ(encoder->blocks().size(), 4u);
  EXPECT_EQ(encoder->blocks()[1].kind, BlockKind::kTanh);
  EXPECT_EQ(encoder->blocks()[1].offset, 3);
  // The bins' block names its position column (the marginal target refines by it).
  EXPECT_EQ(encoder->blocks()[0].position_offset, 3);
  EXPECT_EQ(encoder->blocks()[0].position_slots, 3);
  EXPECT_EQ(encoder->blocks()[2].position_offset, 6);
  EXPECT_EQ(encoder->blocks()[2].position_slots, 2);
  CsvTable table;
  table.header = {"gain", "rate"};
  table.rows = {{"0", "0"}, {"1", "0.25"}, {"1999", "0.75"}, {"1000", "1"}, {"99999", "0.5"}};
  auto result = encoder->Encode(table, "t.csv");
  ASSERT_TRUE(result.ok()) << result.status();
  const std::vector<float>& v = result->table.values;
  // 0 is the point mass [0, 1): bin 0, position -1.
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[3], -1.0f);
  // 1 and 1999 are the ends of the integer bin [1, 2000) = 1..1999.
  EXPECT_EQ(v[7 + 1], 1.0f);
  EXPECT_FLOAT_EQ(v[7 + 3], -1.0f);
  EXPECT_FLOAT_EQ(v[14 + 3], 1.0f);
  // 0.25 is the middle of [0, 0.5).
  EXPECT_FLOAT_EQ(v[7 + 6], 0.0f);
  // Every value decodes to itself, not to its bin's midpoint.
  const CsvTable decoded = encoder->Decode(v.data(), result->table.rows);
  EXPECT_EQ(decoded.rows, table.rows);
}

TEST(EncoderTest, WithinBinDecodesInsideTheChosenBin) {
  auto encoder = TableEncoder::Create(WithinBinSchema());
  ASSERT_TRUE(encoder.ok());
  // Generator-like output: soft bin scores, positions anywhere (even beyond [-1, 1]).
  const std::vector<float> row = {0.1f, 0.7f, 0.2f, 3.0f, 0.6f, 0.4f, -0.2f};
  const CsvTable decoded = encoder->Decode(row.data(), 1);
  EXPECT_EQ(decoded.rows[0][0], "1999");  // bin [1, 2000), position clamped to its top
  double rate = 0;
  ASSERT_TRUE(absl::SimpleAtod(decoded.rows[0][1], &rate));
  EXPECT_NEAR(rate, 0.2, 1e-6);  // bin [0, 0.5), position -0.2 -> 0.4 of the way
}

TEST(EncoderTest, WithinBinNeedsBins) {
  auto schema = ParseSchema(
      R"({"columns":[{"name":"x","type":"integer","min":0,"max":9,"within_bin":true}]})", "x.json");
  ASSERT_FALSE(schema.ok());
  EXPECT_THAT(schema.status().message(), HasSubstr("'within_bin' needs declared 'bins'"));
}

}  // namespace
}  // namespace vfsynth
