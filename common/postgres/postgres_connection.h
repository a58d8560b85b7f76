#ifndef VFSYNTH_COMMON_POSTGRES_POSTGRES_CONNECTION_H_
#define VFSYNTH_COMMON_POSTGRES_POSTGRES_CONNECTION_H_

// One libpq connection. libpq's types stay in the .cc files of this directory.

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct pg_conn;
struct pg_result;

namespace vfsynth {

class PostgresConnection {
 public:
  // Connects with `conninfo` (a libpq connection string or URI that must not carry a
  // password) and the first line of `password_file`, if named; otherwise libpq finds the
  // password (PGPASSWORD, PGPASSFILE, ~/.pgpass). Errors name the connection, never the
  // password. The session's client encoding is UTF-8.
  static absl::StatusOr<PostgresConnection> Connect(const std::string& conninfo,
                                                    const std::string& password_file);

  PostgresConnection(PostgresConnection&& other) noexcept;
  PostgresConnection& operator=(PostgresConnection&& other) noexcept;
  ~PostgresConnection();

  // "PostgreSQL user=u dbname=d host=h port=p": how errors and logs name it.
  const std::string& name() const { return name_; }

  // Runs one statement (more than one is refused by the server); `what` says in errors
  // what it was for.
  absl::Status Execute(const std::string& sql, const std::string& what);
  // `name` as a quoted SQL identifier; "schema.table" quotes each part.
  absl::StatusOr<std::string> QuotedIdentifier(const std::string& name, bool qualified);

  // The server's error for a failed result (or the connection's), with this connection's
  // name: UNAVAILABLE if the connection was lost, else INVALID_ARGUMENT.
  absl::Status Error(const pg_result* result, const std::string& doing) const;

  pg_conn* get() { return conn_; }

 private:
  PostgresConnection(pg_conn* conn, std::string name) : conn_(conn), name_(std::move(name)) {}

  pg_conn* conn_ = nullptr;
  std::string name_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_POSTGRES_POSTGRES_CONNECTION_H_
