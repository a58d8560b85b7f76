#include "common/postgres/postgres_target.h"

#include <libpq-fe.h>

#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/quoted_value.h"
#include "common/base/status_macros.h"
#include "common/data/schema.h"
#include "common/postgres/postgres_connection.h"

namespace vfsynth {
namespace {

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

// COPY's text format: tab between fields, \N for NULL, backslash escapes.
void AppendCopyField(const std::string& value, const PostgresColumn& column, std::string* out) {
  if (value == column.null_text) {
    out->append("\\N");
    return;
  }
  for (char c : value) {
    const char escaped = c == '\\' ? '\\' : c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : 0;
    if (escaped != 0) out->push_back('\\');
    out->push_back(escaped != 0 ? escaped : c);
  }
}

absl::Status CopyRows(const CsvTable& table, const std::vector<PostgresColumn>& columns,
                      const std::string& copy, PostgresConnection* connection) {
  PGconn* conn = connection->get();
  Result started(PQexecParams(conn, copy.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0),
                 &PQclear);
  if (started == nullptr || PQresultStatus(started.get()) != PGRES_COPY_IN)
    return connection->Error(started.get(), "starting COPY");
  constexpr size_t kChunk = 1 << 20;
  std::string buffer;
  const auto flush = [&]() -> absl::Status {
    if (!buffer.empty() && PQputCopyData(conn, buffer.data(), static_cast<int>(buffer.size())) != 1)
      return connection->Error(nullptr, "sending rows");
    buffer.clear();
    return absl::OkStatus();
  };
  for (const std::vector<std::string>& row : table.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) buffer.push_back('\t');
      AppendCopyField(row[c], columns[c], &buffer);
    }
    buffer.push_back('\n');
    if (buffer.size() >= kChunk) RETURN_IF_ERROR(flush());
  }
  RETURN_IF_ERROR(flush());
  if (PQputCopyEnd(conn, nullptr) != 1) return connection->Error(nullptr, "ending COPY");
  Result done(PQgetResult(conn), &PQclear);
  // Drain: libpq wants every result of the statement read before the next one.
  while (PGresult* more = PQgetResult(conn)) PQclear(more);
  if (done == nullptr || PQresultStatus(done.get()) != PGRES_COMMAND_OK)
    return connection->Error(done.get(), "copying the rows");
  return absl::OkStatus();
}

}  // namespace

std::vector<PostgresColumn> PostgresColumnsFor(const std::vector<std::string>& header,
                                               const std::vector<v1::Schema>& schemas) {
  absl::flat_hash_map<std::string, PostgresColumn> declared;
  for (const v1::Schema& schema : schemas) {
    for (const v1::Column& column : schema.columns()) {
      PostgresColumn& out = declared[column.name()];
      const absl::StatusOr<ColumnKind> kind = ParseColumnKind(column.type());
      if (kind.ok() && *kind == ColumnKind::kInteger) out.type = "bigint";
      if (kind.ok() && *kind == ColumnKind::kContinuous) out.type = "double precision";
      out.null_text = MissingToken(schema, column);
    }
  }
  std::vector<PostgresColumn> columns;
  for (const std::string& name : header) {
    const auto it = declared.find(name);
    columns.push_back(it != declared.end() ? it->second : PostgresColumn());
  }
  return columns;
}

absl::Status CheckPostgresTarget(const v1::PostgresTarget& target) {
  ASSIGN_OR_RETURN(PostgresConnection connection,
                   PostgresConnection::Connect(target.conninfo(), target.password_file()));
  ASSIGN_OR_RETURN(const std::string table,
                   connection.QuotedIdentifier(target.table(), /*qualified=*/true));
  const char* values[] = {table.c_str()};
  Result found(PQexecParams(connection.get(), "SELECT to_regclass($1::text) IS NOT NULL", 1,
                            nullptr, values, nullptr, nullptr, 0),
               &PQclear);
  if (found == nullptr || PQresultStatus(found.get()) != PGRES_TUPLES_OK)
    return connection.Error(found.get(), "looking up output.postgres.table");
  if (std::string(PQgetvalue(found.get(), 0, 0)) == "t") {
    return absl::AlreadyExistsError(
        absl::StrCat(connection.name(), ": output.postgres.table ", QuotedValue(target.table()),
                     " already exists; the curator creates it (drop it, or name a new table)"));
  }
  return absl::OkStatus();
}

absl::Status WritePostgresTable(const v1::PostgresTarget& target, const CsvTable& table,
                                const std::vector<PostgresColumn>& columns) {
  if (columns.size() != table.header.size())
    return absl::InternalError("WritePostgresTable: one column type per header column");
  ASSIGN_OR_RETURN(PostgresConnection connection,
                   PostgresConnection::Connect(target.conninfo(), target.password_file()));
  ASSIGN_OR_RETURN(const std::string name,
                   connection.QuotedIdentifier(target.table(), /*qualified=*/true));
  std::vector<std::string> definitions;
  std::vector<std::string> names;
  for (size_t c = 0; c < columns.size(); ++c) {
    ASSIGN_OR_RETURN(names.emplace_back(),
                     connection.QuotedIdentifier(table.header[c], /*qualified=*/false));
    definitions.push_back(absl::StrCat(names.back(), " ", columns[c].type));
  }
  // Dropping the connection before COMMIT rolls everything back, the new table included.
  RETURN_IF_ERROR(connection.Execute("BEGIN", "starting the output transaction"));
  RETURN_IF_ERROR(connection.Execute(
      absl::StrCat("CREATE TABLE ", name, " (", absl::StrJoin(definitions, ", "), ")"),
      absl::StrCat("creating output.postgres.table ", QuotedValue(target.table()),
                   " (it must not exist yet)")));
  RETURN_IF_ERROR(CopyRows(
      table, columns, absl::StrCat("COPY ", name, " (", absl::StrJoin(names, ", "), ") FROM STDIN"),
      &connection));
  return connection.Execute("COMMIT", "committing the output table");
}

}  // namespace vfsynth
