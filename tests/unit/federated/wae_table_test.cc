// The autoencoder's view of a table: inputs in [0, 1] in the schema's encoding, rows
// grouped by user, and rows drawn back through the schema.
#include "common/federated/wae_table.h"

#include <gtest/gtest.h>

#include "common/data/schema.h"

namespace vfsynth {
namespace {

v1::Schema TwoColumns() {
  v1::Schema schema;
  v1::Column* color = schema.add_columns();
  color->set_name("color");
  color->set_type("categorical");
  color->add_categories("red");
  color->add_categories("blue");
  v1::Column* size = schema.add_columns();
  size->set_name("size");
  size->set_type("continuous");
  size->set_min(0);
  size->set_max(10);
  size->set_encoding("scalar");
  return schema;
}

TEST(WaeTableTest, ScalarsAreMovedIntoTheUnitIntervalAndOneHotsKept) {
  auto encoder = TableEncoder::Create(TwoColumns());
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  CsvTable table;
  table.header = {"color", "size"};
  table.rows = {{"red", "0"}, {"blue", "10"}, {"blue", "5"}};
  table.line_numbers = {2, 3, 4};
  auto encoded = encoder->Encode(table, "t.csv");
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  const torch::Tensor inputs = WaeInputs(encoded->table, encoder->blocks());
  ASSERT_EQ(inputs.sizes(), (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(
      torch::allclose(inputs, torch::tensor({{1.f, 0.f, 0.f}, {0.f, 1.f, 1.f}, {0.f, 1.f, 0.5f}})))
      << inputs;
}

TEST(WaeTableTest, RowsGroupByUserInOrderOfFirstAppearance) {
  const torch::Tensor inputs = torch::arange(5, torch::kFloat32).unsqueeze(1);
  const UserRows users = GroupByUser(inputs, {"b", "a", "b", "c", "a"}, {"1", "2", "3", "4", "5"});
  ASSERT_EQ(users.names, (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_TRUE(torch::equal(users.rows[0], torch::tensor({{0.f}, {2.f}})));
  EXPECT_TRUE(torch::equal(users.rows[1], torch::tensor({{1.f}, {4.f}})));
  EXPECT_TRUE(torch::equal(users.rows[2], torch::tensor({{3.f}})));
  const UserRows rows = GroupByUser(inputs, {}, {"1", "2", "3", "4", "5"});
  ASSERT_EQ(rows.rows.size(), 5u);
  EXPECT_EQ(rows.names[4], "5");
}

TEST(WaeTableTest, SampledRowsFollowTheSchemaAndTheirSeed) {
  auto encoder = TableEncoder::Create(TwoColumns());
  ASSERT_TRUE(encoder.ok());
  torch::manual_seed(1);
  Wae model(WaeOptions{encoder->width(), 8, 2});
  const CsvTable table = SampleWaeTable(model, *encoder, 50, 7);
  ASSERT_EQ(table.header, (std::vector<std::string>{"color", "size"}));
  ASSERT_EQ(table.rows.size(), 50u);
  for (const auto& row : table.rows) {
    EXPECT_TRUE(row[0] == "red" || row[0] == "blue") << row[0];
    const double size = std::stod(row[1]);
    EXPECT_GE(size, 0);
    EXPECT_LE(size, 10);
  }
  EXPECT_EQ(SampleWaeTable(model, *encoder, 50, 7).rows, table.rows);
  EXPECT_NE(SampleWaeTable(model, *encoder, 50, 8).rows, table.rows);
}

// More rows than one decoding chunk: every row is there and valid, the table is still a
// function of its seed, and the last chunk's rows follow the first chunk's distribution.
TEST(WaeTableTest, ATableLargerThanAChunkHasEveryRowFromOneDistribution) {
  auto encoder = TableEncoder::Create(TwoColumns());
  ASSERT_TRUE(encoder.ok());
  torch::manual_seed(2);
  Wae model(WaeOptions{encoder->width(), 8, 2});
  constexpr int64_t kRows = 140000;  // two full chunks and part of a third
  const CsvTable table = SampleWaeTable(model, *encoder, kRows, 3);
  ASSERT_EQ(table.rows.size(), static_cast<size_t>(kRows));
  auto red_share = [&](size_t first, size_t last) {
    double red = 0;
    for (size_t r = first; r < last; ++r) red += table.rows[r][0] == "red" ? 1 : 0;
    return red / static_cast<double>(last - first);
  };
  for (const auto& row : table.rows) ASSERT_TRUE(row[0] == "red" || row[0] == "blue") << row[0];
  EXPECT_NEAR(red_share(0, 65536), red_share(131072, kRows), 0.03);
  EXPECT_EQ(SampleWaeTable(model, *encoder, kRows, 3).rows, table.rows);
  EXPECT_TRUE(SampleWaeTable(model, *encoder, 0, 3).rows.empty());
}

}  // namespace
}  // namespace vfsynth
