// A drafted schema: types, rounded bounds, sorted categories, the party layout, and a
// warning for everything a person must review before publishing it.
#include "common/data/schema_draft.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/data/schema.h"

namespace vfsynth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

CsvTable Table() {
  CsvTable table;
  table.header = {"age", "income", "sex", "city", "code"};
  for (int i = 0; i < 40; ++i) {
    table.rows.push_back(
        {std::to_string(17 + i), i % 7 == 0 ? "?" : std::to_string(1000.5 + 37 * i),
         i % 2 ? "female" : "male", i < 38 ? "Paris" : "Oslo", "c" + std::to_string(i)});
  }
  return table;
}

TEST(SchemaDraftTest, BoundsAreRoundedOutwardToOneSignificantStep) {
  EXPECT_EQ(RoundBoundsOutward(17, 90), std::make_pair(10.0, 90.0));
  EXPECT_EQ(RoundBoundsOutward(0, 99999), std::make_pair(0.0, 100000.0));
  EXPECT_EQ(RoundBoundsOutward(12285, 1484705), std::make_pair(0.0, 2000000.0));
  EXPECT_EQ(RoundBoundsOutward(-3.7, 2.2), std::make_pair(-4.0, 3.0));
  EXPECT_EQ(RoundBoundsOutward(5, 5), std::make_pair(5.0, 5.0));
}

TEST(SchemaDraftTest, DraftsTypesBoundsCategoriesAndMissingValues) {
  SchemaDraftOptions options;
  options.max_categories = 30;
  const absl::StatusOr<SchemaDraft> draft = DraftSchema(Table(), options);
  ASSERT_TRUE(draft.ok()) << draft.status();
  const v1::Schema& schema = draft->schema;
  ASSERT_EQ(schema.columns_size(), 5);
  EXPECT_EQ(schema.columns(0).type(), "integer");
  EXPECT_EQ(schema.columns(0).min(), 10);
  EXPECT_EQ(schema.columns(0).max(), 60);  // 17..56
  EXPECT_FALSE(schema.columns(0).nullable());
  EXPECT_EQ(schema.columns(1).type(), "continuous");
  EXPECT_TRUE(schema.columns(1).nullable());
  EXPECT_EQ(schema.columns(2).type(), "categorical");
  EXPECT_THAT(schema.columns(2).categories(), ElementsAre("female", "male"));
  EXPECT_TRUE(ValidateSchema(schema).ok());
  // Every drafted bound, the rare 'Oslo' and the id-like 'code' are flagged by name.
  std::string warnings;
  for (const std::string& w : draft->warnings) warnings += w + "\n";
  EXPECT_THAT(warnings, HasSubstr("column 'age': bounds [10, 60]"));
  EXPECT_THAT(warnings, HasSubstr("column 'city': seen fewer than 5 times: Oslo;"));
  EXPECT_THAT(warnings, HasSubstr("column 'code': 40 distinct values"));
  EXPECT_THAT(warnings, testing::Not(HasSubstr("column 'sex'")));
}

TEST(SchemaDraftTest, PartiesGetContiguousGroupsOfEveryColumn) {
  SchemaDraftOptions options;
  options.parties = 2;
  const absl::StatusOr<SchemaDraft> draft = DraftSchema(Table(), options);
  ASSERT_TRUE(draft.ok()) << draft.status();
  ASSERT_EQ(draft->parties.parties_size(), 2);
  EXPECT_THAT(draft->parties.parties(0).columns(), ElementsAre("age", "income"));
  EXPECT_THAT(draft->parties.parties(1).columns(), ElementsAre("sex", "city", "code"));
  EXPECT_EQ(draft->parties.id_column(), draft->schema.id_column());
}

TEST(SchemaDraftTest, RefusesWhatCannotBeDrafted) {
  SchemaDraftOptions options;
  options.parties = 6;
  EXPECT_THAT(DraftSchema(Table(), options).status().message(),
              HasSubstr("cannot cut 5 columns into 6 parties"));
  EXPECT_FALSE(DraftSchema(CsvTable(), SchemaDraftOptions()).ok());
  CsvTable empty_column = Table();
  for (auto& row : empty_column.rows) row[3] = "?";
  EXPECT_THAT(DraftSchema(empty_column, SchemaDraftOptions()).status().message(),
              HasSubstr("column 'city' has no value"));
}

}  // namespace
}  // namespace vfsynth
