// Against a real server: tests/postgres/with_postgres.sh starts one and names it in
// VFSYNTH_PG_CONNINFO and VFSYNTH_PG_PASSWORD_FILE (tests/unit/postgres/CMakeLists.txt).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <cstdlib>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/data/csv.h"
#include "common/data/party_data.h"
#include "common/data/schema.h"
#include "common/postgres/postgres_connection.h"
#include "common/postgres/postgres_source.h"
#include "common/postgres/postgres_target.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSchema[] = R"({"id_column":"id","columns":[
    {"name":"age","type":"integer","min":17,"max":90},
    {"name":"workclass","type":"categorical","categories":["Private","State-gov"],"nullable":true},
    {"name":"hours","type":"continuous","min":1,"max":99,"nullable":true}]})";

// Rows in id order; "?" is the CSV's missing value, NULL the table's.
const std::vector<std::vector<std::string>> kRows = {
    {"p01", "39", "State-gov", "40"}, {"p02", "50", "Private", "13.5"},
    {"p03", "38", "?", "40"},         {"p04", "53", "Private", "?"},
    {"p05", "28", "Private", "40"},   {"p06", "37", "State-gov", "80"},
    {"p07", "49", "Private", "16"}};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string SqlValue(const std::string& value) {
  return value == "?" ? "NULL" : absl::StrCat("'", value, "'");
}

class PostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conninfo_ = Env("VFSYNTH_PG_CONNINFO");
    password_file_ = Env("VFSYNTH_PG_PASSWORD_FILE");
    ASSERT_FALSE(conninfo_.empty()) << "run through tests/postgres/with_postgres.sh";
    auto admin = PostgresConnection::Connect(conninfo_, password_file_);
    ASSERT_TRUE(admin.ok()) << admin.status();
    admin_.emplace(*std::move(admin));
    auto schema = ParseSchema(kSchema, "people.json");
    ASSERT_TRUE(schema.ok()) << schema.status();
    schema_ = *schema;
    // Each test gets its own table; the CSV holds the same rows.
    // Lower case: the set-up's SQL leaves names unquoted.
    table_ = absl::AsciiStrToLower(
        absl::StrCat("people_", ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::vector<std::string> values;
    for (const auto& row : kRows) {
      values.push_back(absl::StrCat("('", row[0], "', ", row[1], ", ", SqlValue(row[2]), ", ",
                                    SqlValue(row[3]), ")"));
    }
    Run(absl::StrCat(
        "CREATE TABLE ", table_,
        " (id text, age integer, workclass text, hours double precision, extra text)"));
    Run(absl::StrCat("INSERT INTO ", table_, " (id, age, workclass, hours) VALUES ",
                     absl::StrJoin(values, ", ")));
    csv_path_ = ::testing::TempDir() + "/" + table_ + ".csv";
    std::ofstream csv(csv_path_);
    csv << "id,age,workclass,hours\n";
    for (const auto& row : kRows) csv << absl::StrJoin(row, ",") << "\n";
    schema_path_ = ::testing::TempDir() + "/" + table_ + ".json";
    std::ofstream(schema_path_) << kSchema;
  }

  void Run(const std::string& sql) {
    const absl::Status status = admin_->Execute(sql, "test set-up");
    ASSERT_TRUE(status.ok()) << status;
  }

  v1::PostgresSource Source() const {
    v1::PostgresSource source;
    source.set_conninfo(conninfo_);
    source.set_password_file(password_file_);
    source.set_table(table_);
    return source;
  }

  // The source read and encoded the way the party daemon does.
  absl::StatusOr<PartyData> Load(const v1::PostgresSource& source,
                                 const PostgresReadOptions& options = {}) const {
    auto table = ReadPostgresRows(source, PartyColumns(schema_), options);
    if (!table.ok()) return table.status();
    return EncodePartyTable(*table, PostgresSourceName(source), schema_, /*skip_bad_rows=*/false);
  }

  std::string conninfo_;
  std::string password_file_;
  std::optional<PostgresConnection> admin_;
  v1::Schema schema_;
  std::string table_;
  std::string csv_path_;
  std::string schema_path_;
};

TEST_F(PostgresTest, TableAndQueryReadWhatTheCsvReads) {
  auto from_csv = LoadPartyData(csv_path_, schema_path_, /*skip_bad_rows=*/false);
  ASSERT_TRUE(from_csv.ok()) << from_csv.status();
  v1::PostgresSource query = Source();
  query.clear_table();
  query.set_query(absl::StrCat("SELECT id, age, workclass, hours FROM ", table_, " ORDER BY id;"));
  for (const v1::PostgresSource& source : {Source(), query}) {
    PostgresReadOptions options;
    options.fetch_rows = 3;  // several batches
    auto from_postgres = Load(source, options);
    ASSERT_TRUE(from_postgres.ok()) << from_postgres.status();
    EXPECT_EQ(from_postgres->ids, from_csv->ids) << source.query();
    EXPECT_EQ(from_postgres->encoded.rows, 7);
    EXPECT_EQ(from_postgres->encoded.width, from_csv->encoded.width);
    EXPECT_EQ(from_postgres->encoded.values, from_csv->encoded.values) << source.query();
  }
}

TEST_F(PostgresTest, WrongPasswordNamesTheConnectionNotThePassword) {
  const std::string password_file = ::testing::TempDir() + "/wrong.password";
  const std::string password = "not-the-password-4c1d";
  std::ofstream(password_file) << password << "\n";
  ASSERT_EQ(::chmod(password_file.c_str(), 0600), 0);
  v1::PostgresSource source = Source();
  source.set_password_file(password_file);
  const auto read = ReadPostgresRows(source, PartyColumns(schema_));
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(),
              AllOf(HasSubstr("cannot connect to PostgreSQL user=vfsynth_admin dbname=postgres"),
                    HasSubstr("password authentication failed"), Not(HasSubstr(password))));
}

TEST_F(PostgresTest, PasswordFileOthersCanReadIsRefused) {
  const std::string password_file = ::testing::TempDir() + "/open.password";
  std::ofstream(password_file) << "secret\n";
  ASSERT_EQ(::chmod(password_file.c_str(), 0644), 0);
  v1::PostgresSource source = Source();
  source.set_password_file(password_file);
  const auto read = ReadPostgresRows(source, PartyColumns(schema_));
  EXPECT_THAT(read.status().message(), HasSubstr("chmod 600"));
}

TEST_F(PostgresTest, PasswordInTheConnectionStringIsRefused) {
  v1::PostgresSource source = Source();
  source.set_conninfo(absl::StrCat(conninfo_, " password=hunter2"));
  const auto read = ReadPostgresRows(source, PartyColumns(schema_));
  EXPECT_THAT(read.status().message(),
              AllOf(HasSubstr("use password_file"), Not(HasSubstr("hunter2"))));
}

TEST_F(PostgresTest, MissingColumnIsNamed) {
  Run(absl::StrCat("ALTER TABLE ", table_, " DROP COLUMN hours"));
  const auto read = Load(Source());
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(),
              AllOf(HasSubstr(absl::StrCat("reading table '", table_, "'")),
                    HasSubstr("column \"hours\" does not exist")));
}

TEST_F(PostgresTest, QueryWithoutASchemaColumnFailsLikeTheCsv) {
  v1::PostgresSource source = Source();
  source.clear_table();
  source.set_query(absl::StrCat("SELECT id, age, workclass FROM ", table_));
  const auto read = Load(source);
  EXPECT_THAT(read.status().message(),
              HasSubstr("postgres:query: column 'hours' of the schema is not in the header"));
}

TEST_F(PostgresTest, ValueOutsideTheSchemaGivesRowColumnAndValue) {
  Run(absl::StrCat("UPDATE ", table_, " SET workclass = 'Pirate' WHERE id = 'p05'"));
  const auto read = Load(Source());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(),
            absl::StrCat("postgres:", table_,
                         ":5: column 'workclass': value 'Pirate' is not one of the schema's "
                         "categories"));
}

TEST_F(PostgresTest, TypeThatDoesNotFitTheSchemaGivesRowColumnAndValue) {
  Run(absl::StrCat("ALTER TABLE ", table_, " ALTER COLUMN age TYPE text"));
  Run(absl::StrCat("UPDATE ", table_, " SET age = 'forty' WHERE id = 'p02'"));
  const auto read = Load(Source());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(),
            absl::StrCat("postgres:", table_, ":2: column 'age': 'forty' is not a finite number"));
}

TEST_F(PostgresTest, NullInAColumnNotNullableIsAMissingValue) {
  Run(absl::StrCat("UPDATE ", table_, " SET age = NULL WHERE id = 'p03'"));
  const auto read = Load(Source());
  EXPECT_THAT(read.status().message(),
              HasSubstr(absl::StrCat(":3: column 'age': missing value in a column not declared "
                                     "nullable")));
}

TEST_F(PostgresTest, ServerGoingAwayMidReadIsAnErrorAndNoRows) {
  PostgresReadOptions options;
  options.fetch_rows = 2;
  int fetches = 0;
  options.after_fetch = [&](int64_t) {
    if (++fetches != 1) return;
    // From a second session: end the reader's between its FETCHes.
    const absl::Status status = admin_->Execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
        "'vfsynth' AND pid <> pg_backend_pid()",
        "terminating the reader");
    EXPECT_TRUE(status.ok()) << status;
  };
  const auto read = ReadPostgresRows(Source(), PartyColumns(schema_), options);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kUnavailable) << read.status();
  EXPECT_THAT(read.status().message(), AllOf(HasSubstr("after 2 rows (nothing was loaded)"),
                                             HasSubstr("the connection was lost")));
  EXPECT_EQ(fetches, 1);
}

TEST_F(PostgresTest, QueryThatWritesIsRefused) {
  Run(absl::StrCat("CREATE SEQUENCE ", table_, "_seq"));
  v1::PostgresSource source = Source();
  source.clear_table();
  source.set_query(
      absl::StrCat("SELECT nextval('", table_, "_seq')::text AS id, age FROM ", table_));
  EXPECT_THAT(ReadPostgresRows(source, {"id"}).status().message(),
              HasSubstr("read-only transaction"));
  // One statement only: what follows a ';' never runs.
  source.set_query(absl::StrCat("SELECT * FROM ", table_, "; DROP TABLE ", table_));
  EXPECT_FALSE(ReadPostgresRows(source, {"id"}).ok());
  source.set_query(
      absl::StrCat("WITH gone AS (DELETE FROM ", table_, " RETURNING *) SELECT * FROM gone"));
  EXPECT_FALSE(ReadPostgresRows(source, {"id"}).ok());
  auto rows = ReadPostgresRows(Source(), PartyColumns(schema_));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->rows.size(), kRows.size());
}

TEST_F(PostgresTest, IdentifiersAreQuoted) {
  const std::string odd = "odd \"name\"; DROP TABLE x";
  Run(absl::StrCat("CREATE TABLE \"odd \"\"name\"\"; DROP TABLE x\" AS SELECT * FROM ", table_));
  v1::PostgresSource source = Source();
  source.set_table(odd);
  auto rows = ReadPostgresRows(source, PartyColumns(schema_));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->rows.size(), kRows.size());
  source.set_table(absl::StrCat("public.", table_));
  EXPECT_TRUE(ReadPostgresRows(source, PartyColumns(schema_)).ok());
}

v1::PostgresTarget Target(const std::string& conninfo, const std::string& password_file,
                          const std::string& table) {
  v1::PostgresTarget target;
  target.set_conninfo(conninfo);
  target.set_password_file(password_file);
  target.set_table(table);
  return target;
}

CsvTable Published() {
  CsvTable table;
  table.header = {"age", "workclass", "hours"};
  for (const auto& row : kRows) table.rows.push_back({row[1], row[2], row[3]});
  return table;
}

TEST_F(PostgresTest, OutputIsCreatedWithTheSchemasTypesAndNulls) {
  const v1::PostgresTarget target = Target(conninfo_, password_file_, table_ + "_out");
  ASSERT_TRUE(CheckPostgresTarget(target).ok());
  const CsvTable published = Published();
  const absl::Status written =
      WritePostgresTable(target, published, PostgresColumnsFor(published.header, {schema_}));
  ASSERT_TRUE(written.ok()) << written;
  v1::PostgresSource back = Source();
  back.clear_table();
  back.set_query(
      absl::StrCat("SELECT count(*) AS n, count(workclass) AS workclass, sum(age) AS age, "
                   "pg_typeof(min(hours))::text AS hours_type FROM ",
                   table_, "_out"));
  auto read = ReadPostgresRows(back, {"n"});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->rows.at(0), (std::vector<std::string>{"7", "6", "294", "double precision"}));
  EXPECT_THAT(CheckPostgresTarget(target).message(), HasSubstr("already exists"));
  EXPECT_THAT(WritePostgresTable(target, published, PostgresColumnsFor(published.header, {schema_}))
                  .message(),
              HasSubstr("already exists"));
  read = ReadPostgresRows(back, {"n"});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->rows.at(0).at(0), "7");
}

TEST_F(PostgresTest, OutputTextKeepsTabsBackslashesAndLineBreaks) {
  const v1::PostgresTarget target = Target(conninfo_, password_file_, table_ + "_out");
  CsvTable published;
  published.header = {"note"};
  const std::string odd = "tab\there \\N back\\slash\nline\r";
  published.rows = {{odd}, {"\\N"}};
  const absl::Status written =
      WritePostgresTable(target, published, PostgresColumnsFor(published.header, {schema_}));
  ASSERT_TRUE(written.ok()) << written;
  v1::PostgresSource back = Source();
  back.clear_table();
  back.set_query(absl::StrCat("SELECT note FROM ", table_, "_out ORDER BY note DESC"));
  auto read = ReadPostgresRows(back, {"note"});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->rows, (std::vector<std::vector<std::string>>{{odd}, {"\\N"}}));
}

TEST_F(PostgresTest, FailureMidWriteLeavesNoTable) {
  const v1::PostgresTarget target = Target(conninfo_, password_file_, table_ + "_out");
  CsvTable published = Published();
  published.rows[5][0] = "not-an-integer";  // the 6th row fails inside COPY
  const absl::Status written =
      WritePostgresTable(target, published, PostgresColumnsFor(published.header, {schema_}));
  EXPECT_THAT(written.message(), AllOf(HasSubstr("copying the rows"), HasSubstr("bigint")));
  EXPECT_TRUE(CheckPostgresTarget(target).ok()) << "the table outlived the failed transaction";
}

}  // namespace
}  // namespace vfsynth
