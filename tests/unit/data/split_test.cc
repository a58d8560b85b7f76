#include "common/data/split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/base/proto_json.h"
#include "common/data/schema.h"

namespace vfsynth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Schema JointSchema() {
  auto schema = ParseSchema(R"({"columns":[
      {"name":"a","type":"categorical","categories":["x","y"]},
      {"name":"b","type":"integer","min":0,"max":9},
      {"name":"c","type":"continuous","min":0,"max":1}]})",
                            "joint.json");
  EXPECT_TRUE(schema.ok());
  return *schema;
}

CsvTable JointTable() {
  CsvTable t;
  t.header = {"a", "b", "c"};
  t.rows = {{"x", "1", "0.5"}, {"y", "2", "0.25"}};
  t.line_numbers = {2, 3};
  return t;
}

v1::PartiesFile Parties(const std::string& json) {
  v1::PartiesFile parties;
  EXPECT_TRUE(ParseJsonInto(json, "parties.json", &parties).ok());
  return parties;
}

TEST(SplitTest, AddsIdAndKeepsSchemaOrder) {
  auto result = SplitTable(JointTable(), JointSchema(),
                           Parties(R"({"parties":[{"name":"p","columns":["c","a"]},
                                                  {"name":"q","columns":["b"]}]})"));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->parties.size(), 2u);
  const PartyTable& p = result->parties[0];
  EXPECT_THAT(p.table.header, ElementsAre("id", "a", "c"));
  EXPECT_THAT(p.table.rows[1], ElementsAre("1", "y", "0.25"));
  EXPECT_EQ(p.schema.id_column(), "id");
  ASSERT_EQ(p.schema.columns_size(), 2);
  EXPECT_EQ(p.schema.columns(1).name(), "c");
  EXPECT_THAT(result->parties[1].table.rows[0], ElementsAre("0", "1"));
  EXPECT_TRUE(result->unassigned_columns.empty());
}

TEST(SplitTest, KeepsExistingIds) {
  v1::Schema schema = JointSchema();
  schema.set_id_column("pid");
  CsvTable table = JointTable();
  table.header.push_back("pid");
  table.rows[0].push_back("u17");
  table.rows[1].push_back("u4");
  auto result = SplitTable(
      table, schema, Parties(R"({"id_column":"key","parties":[{"name":"p","columns":["a"]}]})"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->parties[0].table.header, ElementsAre("key", "a"));
  EXPECT_THAT(result->parties[0].table.rows[1], ElementsAre("u4", "y"));
  EXPECT_THAT(result->unassigned_columns, ElementsAre("b", "c"));

  table.rows[1][3] = "u17";
  auto duplicate =
      SplitTable(table, schema, Parties(R"({"parties":[{"name":"p","columns":["a"]}]})"));
  ASSERT_FALSE(duplicate.ok());
  EXPECT_THAT(duplicate.status().message(), HasSubstr("not unique"));
}

TEST(SplitTest, RejectsBadPartiesFiles) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"parties":[]})", "no parties"},
      {R"({"parties":[{"name":"p","columns":["zz"]}]})", "'zz'"},
      {R"({"parties":[{"name":"p","columns":["a"]},{"name":"q","columns":["a"]}]})", "both"},
      {R"({"parties":[{"name":"p","columns":["a"]},{"name":"p","columns":["b"]}]})", "used twice"},
      {R"({"parties":[{"name":"p","columns":[]}]})", "no columns"},
      {R"({"parties":[{"name":"","columns":["a"]}]})", "is not a party name"},
      // Names become file names under --out and identity URIs: no paths.
      {R"({"parties":[{"name":"../evil","columns":["a"]}]})", "'../evil' is not a party name"},
      {R"({"parties":[{"name":"a/b","columns":["a"]}]})", "'a/b' is not a party name"},
      {R"({"parties":[{"name":".hidden","columns":["a"]}]})", "'.hidden' is not a party name"},
  };
  for (const auto& [json, message] : cases) {
    auto result = SplitTable(JointTable(), JointSchema(), Parties(json));
    ASSERT_FALSE(result.ok()) << json;
    EXPECT_THAT(result.status().message(), HasSubstr(message)) << json;
  }
}

TEST(SplitTest, ByRowsGivesEveryPartyEveryColumnAndRowsInTurn) {
  CsvTable table = JointTable();
  table.rows.push_back({"x", "3", "0.75"});
  table.line_numbers.push_back(4);
  auto result = SplitTable(table, JointSchema(),
                           Parties(R"({"by_rows":true,"parties":[{"name":"p"},{"name":"q"}]})"));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->parties.size(), 2u);
  const PartyTable& p = result->parties[0];
  EXPECT_THAT(p.table.header, ElementsAre("id", "a", "b", "c"));
  ASSERT_EQ(p.table.rows.size(), 2u);
  EXPECT_THAT(p.table.rows[1], ElementsAre("2", "x", "3", "0.75"));
  EXPECT_THAT(p.table.line_numbers, ElementsAre(2, 4));
  EXPECT_EQ(p.schema.columns_size(), 3);
  EXPECT_THAT(result->parties[1].table.rows, ElementsAre(ElementsAre("1", "y", "2", "0.25")));
  EXPECT_EQ(result->parties[1].schema.SerializeAsString().size(),
            p.schema.SerializeAsString().size());

  const auto columns =
      SplitTable(table, JointSchema(),
                 Parties(R"({"by_rows":true,"parties":[{"name":"p","columns":["a"]}]})"));
  ASSERT_FALSE(columns.ok());
  EXPECT_THAT(columns.status().message(), HasSubstr("every party every column"));
  const auto too_many = SplitTable(
      table, JointSchema(),
      Parties(
          R"({"by_rows":true,"parties":[{"name":"p"},{"name":"q"},{"name":"r"},{"name":"s"}]})"));
  ASSERT_FALSE(too_many.ok());
  EXPECT_THAT(too_many.status().message(), HasSubstr("3 rows cannot be cut over 4 parties"));
}

TEST(SplitTest, ByRowsWithAUserColumnKeepsEachUsersRowsAtOneParty) {
  v1::Schema schema = JointSchema();
  schema.set_user_column("u");
  CsvTable table;
  table.header = {"u", "a", "b", "c"};
  // Users in turn: u1 -> p, u2 -> q, u3 -> p; a user's rows need not be adjacent.
  table.rows = {{"u1", "x", "1", "0.5"}, {"u1", "y", "2", "0.25"}, {"u2", "x", "3", "0.5"},
                {"u3", "y", "4", "0.5"}, {"u2", "y", "5", "0.5"}};
  table.line_numbers = {2, 3, 4, 5, 6};
  const v1::PartiesFile two = Parties(R"({"by_rows":true,"parties":[{"name":"p"},{"name":"q"}]})");
  auto result = SplitTable(table, schema, two);
  ASSERT_TRUE(result.ok()) << result.status();
  const PartyTable& p = result->parties[0];
  EXPECT_THAT(p.table.header, ElementsAre("id", "u", "a", "b", "c"));
  EXPECT_EQ(p.schema.user_column(), "u");
  EXPECT_THAT(p.table.rows, ElementsAre(ElementsAre("0", "u1", "x", "1", "0.5"),
                                        ElementsAre("1", "u1", "y", "2", "0.25"),
                                        ElementsAre("3", "u3", "y", "4", "0.5")));
  EXPECT_THAT(result->parties[1].table.rows,
              ElementsAre(ElementsAre("2", "u2", "x", "3", "0.5"),
                          ElementsAre("4", "u2", "y", "5", "0.5")));

  table.rows[3][0] = "";
  const auto empty = SplitTable(table, schema, two);
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("line 5: user column 'u' is empty"));
  table.rows = {{"u1", "x", "1", "0.5"}, {"u1", "y", "2", "0.25"}};
  const auto one_user = SplitTable(table, schema, two);
  ASSERT_FALSE(one_user.ok());
  EXPECT_THAT(one_user.status().message(), HasSubstr("1 users cannot be cut over 2 parties"));
  table.header[0] = "v";
  const auto missing = SplitTable(table, schema, two);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("user column 'u' is not in the input"));
}

TEST(SplitTest, SplitsShippedAdultIntoLoadableFiles) {
  const std::string out = ::testing::TempDir() + "/split_adult";
  auto result =
      SplitFiles(std::string(VFSYNTH_DATASETS_DIR) + "/adult.csv",
                 std::string(VFSYNTH_SOURCE_DIR) + "/deploy/schemas/adult.schema.json",
                 std::string(VFSYNTH_SOURCE_DIR) + "/deploy/parties/adult-3.json", out, false);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->parties.size(), 3u);
  EXPECT_TRUE(result->unassigned_columns.empty());
  int columns = 0;
  for (const PartyTable& party : result->parties) {
    auto schema = LoadSchema(out + "/" + party.name + ".schema.json");
    ASSERT_TRUE(schema.ok()) << schema.status();
    columns += schema->columns_size();
    auto table = ReadCsv(out + "/" + party.name + ".csv");
    ASSERT_TRUE(table.ok()) << table.status();
    EXPECT_EQ(table->rows.size(), 32561u);
  }
  EXPECT_EQ(columns, 15);
}

TEST(SplitTest, HoldOutRowsIsADeterministicPartition) {
  CsvTable table;
  table.header = {"v"};
  for (int i = 0; i < 1000; ++i) {
    table.rows.push_back({std::to_string(i)});
    table.line_numbers.push_back(i + 2);
  }
  const auto [kept, held] = HoldOutRows(table, {0.2, 7});
  ASSERT_EQ(held.rows.size(), 200u);
  ASSERT_EQ(kept.rows.size(), 800u);
  EXPECT_EQ(kept.header, table.header);
  ASSERT_EQ(held.line_numbers.size(), 200u);
  // Every row lands on exactly one side, each side in input order.
  std::vector<int> seen(1000, 0);
  int previous = -1;
  for (size_t i = 0; i < held.rows.size(); ++i) {
    const int v = std::stoi(held.rows[i][0]);
    EXPECT_GT(v, previous);
    EXPECT_EQ(held.line_numbers[i], v + 2);
    previous = v;
    ++seen[v];
  }
  for (const auto& row : kept.rows) ++seen[std::stoi(row[0])];
  EXPECT_THAT(seen, ::testing::Each(1));
  // Same seed, same cut; another seed, another cut; not simply the first rows.
  EXPECT_EQ(HoldOutRows(table, {0.2, 7}).second.rows, held.rows);
  EXPECT_NE(HoldOutRows(table, {0.2, 8}).second.rows, held.rows);
  EXPECT_NE(std::stoi(held.rows.back()[0]), 199);
}

TEST(SplitTest, SplitFilesWithHoldoutWritesTrainAndHoldoutTables) {
  const std::string out = ::testing::TempDir() + "/split_adult_holdout";
  const std::string source = VFSYNTH_SOURCE_DIR;
  auto result = SplitFiles(std::string(VFSYNTH_DATASETS_DIR) + "/adult.csv",
                           source + "/deploy/schemas/adult.schema.json",
                           source + "/deploy/parties/adult-3.json", out, false, {0.2, 1});
  ASSERT_TRUE(result.ok()) << result.status();
  auto train = ReadCsv(out + "/train.csv");
  auto holdout = ReadCsv(out + "/holdout.csv");
  ASSERT_TRUE(train.ok() && holdout.ok());
  EXPECT_EQ(holdout->rows.size(), 6512u);  // round(0.2 * 32561)
  EXPECT_EQ(train->rows.size(), 32561u - 6512u);
  EXPECT_EQ(train->header.size(), 15u);  // the joint columns
  for (const PartyTable& party : result->parties) {
    EXPECT_EQ(party.table.rows.size(), train->rows.size()) << party.name;
  }
  for (double bad : {-0.1, 1.0}) {
    auto refused =
        SplitFiles(std::string(VFSYNTH_DATASETS_DIR) + "/adult.csv",
                   source + "/deploy/schemas/adult.schema.json",
                   source + "/deploy/parties/adult-3.json", out + "_bad", false, {bad, 1});
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.status().message(), HasSubstr("not in [0, 1)"));
  }
}

// split checks values as the parties will, so a bad row fails at split, not later at a party.
TEST(SplitTest, ValuesTheSchemaDoesNotAdmitFailOrAreSkipped) {
  const std::pair<std::vector<std::string>, const char*> bad_rows[] = {
      {{"z", "1", "0.5"}, "column 'a': value 'z' is not one of the schema's categories"},
      {{"x", "nan", "0.5"}, "column 'b'"},
      {{"x", "1", "inf"}, "not a finite number"},
      {{"x", "", "0.5"}, "not declared nullable"},
      {{"x", "1.5", "0.5"}, "not an integer"},
  };
  for (const auto& [row, message] : bad_rows) {
    CsvTable table = JointTable();
    table.rows.push_back(row);
    table.line_numbers.push_back(4);
    const auto refused = KeepValidRows(table, JointSchema(), "joint.csv", /*skip_bad_rows=*/false);
    ASSERT_FALSE(refused.ok()) << message;
    EXPECT_THAT(refused.status().message(), HasSubstr("joint.csv:4"));
    EXPECT_THAT(refused.status().message(), HasSubstr(message));
    const auto kept = KeepValidRows(table, JointSchema(), "joint.csv", /*skip_bad_rows=*/true);
    ASSERT_TRUE(kept.ok()) << kept.status();
    EXPECT_EQ(kept->rows, JointTable().rows);
    EXPECT_EQ(kept->line_numbers, JointTable().line_numbers);
  }
}

}  // namespace
}  // namespace vfsynth
