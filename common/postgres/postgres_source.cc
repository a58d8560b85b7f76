#include "common/postgres/postgres_source.h"

#include <libpq-fe.h>

#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/quoted_value.h"
#include "common/base/status_macros.h"
#include "common/postgres/postgres_connection.h"

namespace vfsynth {
namespace {

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

constexpr char kCursor[] = "vfsynth_rows";

// The statement behind the cursor: the table's columns in id order, or the user's query.
absl::StatusOr<std::string> SelectStatement(const v1::PostgresSource& source,
                                            const std::vector<std::string>& columns,
                                            PostgresConnection* connection) {
  if (source.table().empty()) {
    // A trailing ';' would end the DECLARE early.
    std::string query(absl::StripTrailingAsciiWhitespace(source.query()));
    while (!query.empty() && (query.back() == ';' || absl::ascii_isspace(query.back())))
      query.pop_back();
    return query;
  }
  ASSIGN_OR_RETURN(const std::string table,
                   connection->QuotedIdentifier(source.table(), /*qualified=*/true));
  std::vector<std::string> quoted;
  for (const std::string& column : columns) {
    ASSIGN_OR_RETURN(quoted.emplace_back(),
                     connection->QuotedIdentifier(column, /*qualified=*/false));
  }
  return absl::StrCat("SELECT ", absl::StrJoin(quoted, ", "), " FROM ", table, " ORDER BY ",
                      quoted.front());
}

absl::StatusOr<std::vector<std::string>> Header(PostgresConnection* connection,
                                                const std::string& reading) {
  Result described(PQdescribePortal(connection->get(), kCursor), &PQclear);
  if (described == nullptr || PQresultStatus(described.get()) != PGRES_COMMAND_OK)
    return connection->Error(described.get(), reading);
  std::vector<std::string> header;
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < PQnfields(described.get()); ++i) {
    header.emplace_back(PQfname(described.get(), i));
    if (!seen.insert(header.back()).second) {
      return absl::InvalidArgumentError(absl::StrCat(connection->name(), ": ", reading,
                                                     " names column ", QuotedValue(header.back()),
                                                     " twice"));
    }
  }
  return header;
}

}  // namespace

std::string PostgresSourceName(const v1::PostgresSource& source) {
  return absl::StrCat("postgres:", source.table().empty() ? "query" : source.table());
}

absl::StatusOr<CsvTable> ReadPostgresRows(const v1::PostgresSource& source,
                                          const std::vector<std::string>& columns,
                                          const PostgresReadOptions& options) {
  if (columns.empty() || options.fetch_rows <= 0)
    return absl::InvalidArgumentError("ReadPostgresRows needs columns and fetch_rows > 0");
  ASSIGN_OR_RETURN(PostgresConnection connection,
                   PostgresConnection::Connect(source.conninfo(), source.password_file()));
  const std::string reading = source.table().empty()
                                  ? std::string("running postgres.query")
                                  : absl::StrCat("reading table ", QuotedValue(source.table()));
  ASSIGN_OR_RETURN(const std::string select, SelectStatement(source, columns, &connection));
  // One snapshot for the whole read; a query that writes fails here, not in the database.
  RETURN_IF_ERROR(connection.Execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
                                     "starting a read-only transaction"));
  RETURN_IF_ERROR(connection.Execute(
      absl::StrCat("DECLARE ", kCursor, " NO SCROLL CURSOR FOR ", select), reading));
  CsvTable table;
  ASSIGN_OR_RETURN(table.header, Header(&connection, reading));
  // Batches keep libpq's buffer at fetch_rows rows, whatever the table's size.
  const std::string fetch = absl::StrCat("FETCH FORWARD ", options.fetch_rows, " FROM ", kCursor);
  while (true) {
    Result batch(
        PQexecParams(connection.get(), fetch.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0),
        &PQclear);
    if (batch == nullptr || PQresultStatus(batch.get()) != PGRES_TUPLES_OK) {
      return connection.Error(batch.get(), absl::StrCat(reading, " after ", table.rows.size(),
                                                        " rows (nothing was loaded)"));
    }
    const int rows = PQntuples(batch.get());
    if (rows == 0) break;
    const int fields = PQnfields(batch.get());
    for (int r = 0; r < rows; ++r) {
      std::vector<std::string>& row = table.rows.emplace_back();
      row.reserve(fields);
      for (int f = 0; f < fields; ++f) {
        row.emplace_back(
            PQgetisnull(batch.get(), r, f)
                ? std::string()
                : std::string(PQgetvalue(batch.get(), r, f), PQgetlength(batch.get(), r, f)));
      }
      table.line_numbers.push_back(static_cast<int64_t>(table.rows.size()));
    }
    if (options.after_fetch) options.after_fetch(static_cast<int64_t>(table.rows.size()));
  }
  RETURN_IF_ERROR(connection.Execute("COMMIT", "ending the read-only transaction"));
  return table;
}

}  // namespace vfsynth
