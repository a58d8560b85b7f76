#include "common/data/schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/data/schema_limits.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(SchemaTest, ParsesShippedSchemas) {
  for (const char* name : {"adult", "wine"}) {
    auto schema =
        LoadSchema(std::string(VFSYNTH_SOURCE_DIR) + "/deploy/schemas/" + name + ".schema.json");
    ASSERT_TRUE(schema.ok()) << schema.status();
    EXPECT_GT(schema->columns_size(), 10);
  }
}

TEST(SchemaTest, DefaultsAndOverridesMissingToken) {
  auto schema = ParseSchema(R"({"columns":[
      {"name":"a","type":"categorical","categories":["x"]},
      {"name":"b","type":"continuous","min":0,"max":1,"missing_token":"NA"}]})",
                            "s.json");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(MissingToken(*schema, schema->columns(0)), "?");
  EXPECT_EQ(MissingToken(*schema, schema->columns(1)), "NA");
}

struct BadSchemaCase {
  const char* json;
  const char* message;
};

class BadSchemaTest : public ::testing::TestWithParam<BadSchemaCase> {};

TEST_P(BadSchemaTest, IsRejectedWithClearMessage) {
  auto schema = ParseSchema(GetParam().json, "bad.json");
  ASSERT_FALSE(schema.ok());
  EXPECT_EQ(schema.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(schema.status().message(), HasSubstr("bad.json"));
  EXPECT_THAT(schema.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadSchemaTest,
    ::testing::Values(
        BadSchemaCase{R"({"columns":[]})", "no columns"},
        BadSchemaCase{R"({"columns":[{"name":"a","type":"text"}]})", "unknown column type 'text'"},
        BadSchemaCase{R"({"columns":[{"name":"a","type":"continuous","min":0}]})",
                      "'min' and 'max'"},
        BadSchemaCase{R"({"columns":[{"name":"a","type":"integer","min":5,"max":1}]})",
                      "min < max"},
        BadSchemaCase{R"({"columns":[{"name":"a","type":"categorical"}]})", "no 'categories'"},
        BadSchemaCase{R"({"columns":[{"name":"a","type":"categorical","categories":["x","x"]}]})",
                      "listed twice"},
        BadSchemaCase{R"({"columns":[{"name":"a","type":"categorical","categories":["?"]}]})",
                      "missing-value token"},
        BadSchemaCase{
            R"({"columns":[{"name":"a","type":"continuous","min":0,"max":1,"bins":[0,0.5,0.4]}]})",
            "strictly increasing"},
        BadSchemaCase{
            R"({"columns":[{"name":"a","type":"continuous","min":0,"max":1,"bins":[0,2]}]})",
            "outside"},
        BadSchemaCase{R"({"columns":[{"name":"a","type":"categorical","categories":["x"]},
                                     {"name":"a","type":"categorical","categories":["y"]}]})",
                      "more than once"},
        BadSchemaCase{
            R"({"id_column":"a","columns":[{"name":"a","type":"categorical","categories":["x"]}]})",
            "id column"},
        BadSchemaCase{R"({"colums":[]})", "colums"},
        BadSchemaCase{R"({"columns":[{"name":"a",)", "not a valid Schema"}));

// A megabyte-long name or category is cut in the error, with its length.
TEST(SchemaTest, LongNamesAreCutInErrors) {
  v1::Schema schema;
  v1::Column* column = schema.add_columns();
  column->set_name(std::string(1 << 20, 'n'));
  column->set_type("categorical");
  column->add_categories(std::string(1 << 20, 'c'));
  column->add_categories(std::string(1 << 20, 'c'));
  const absl::Status status = ValidateSchema(schema);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(status.message().size(), 400u);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("listed twice"), HasSubstr("(1048576 bytes)")));
}

// A party's own schema over what any curator may take is refused before it dials,
// naming the column and the setting.
TEST(SchemaLimitsTest, ASchemaOverTheCeilingIsRefusedNamingColumnAndSetting) {
  const v1::RegistrationLimits ceiling = RegistrationLimitsCeiling();
  v1::Schema schema;
  v1::Column* column = schema.add_columns();
  column->set_name("zip");
  column->set_type("categorical");
  for (int v = 0; v < ceiling.categories_per_column(); ++v)
    column->add_categories(std::to_string(v));
  EXPECT_TRUE(CheckSchemaWithinLimits(schema, ceiling, "s.json").ok());
  column->add_categories("one more");
  const absl::Status status = CheckSchemaWithinLimits(schema, ceiling, "s.json");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("s.json: column 'zip' declares 100001 categories"),
                    HasSubstr("registration_limits.categories_per_column (100000)")));
  EXPECT_TRUE(CheckEncodedWidthWithinLimits(ceiling.encoded_width(), ceiling, "s.json").ok());
  EXPECT_THAT(CheckEncodedWidthWithinLimits(ceiling.encoded_width() + 1, ceiling, "s.json")
                  .message(),
              HasSubstr("registration_limits.encoded_width (100000)"));
}

}  // namespace
}  // namespace vfsynth
