#include "common/postgres/postgres_connection.h"

#include <libpq-fe.h>
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

// The first line of a file only its owner may read, as libpq asks of ~/.pgpass.
absl::StatusOr<std::string> ReadPassword(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return ErrnoError("cannot read the password file", path);
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("password file ", path, " may be read by group or others: chmod 600 it"));
  }
  ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  std::string password(text.substr(0, text.find('\n')));
  if (!password.empty() && password.back() == '\r') password.pop_back();
  if (password.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("password file ", path, ": the first line is empty"));
  }
  return password;
}

// Refuses a conninfo that libpq reads a password from (the config check's second line).
absl::Status CheckNoPassword(const std::string& conninfo) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> options(
      PQconninfoParse(conninfo.c_str(), &error), &PQconninfoFree);
  if (options == nullptr) {
    std::string message = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    return absl::InvalidArgumentError(absl::StrCat("PostgreSQL connection string: ",
                                                   absl::StripTrailingAsciiWhitespace(message)));
  }
  for (const PQconninfoOption* option = options.get(); option->keyword != nullptr; ++option) {
    if (std::string(option->keyword) == "password" && option->val != nullptr &&
        option->val[0] != '\0') {
      return absl::InvalidArgumentError(
          "the PostgreSQL connection string carries a password: use password_file");
    }
  }
  return absl::OkStatus();
}

std::string NameOf(PGconn* conn) {
  std::vector<std::string> parts;
  const auto add = [&](const char* key, const char* value) {
    if (value != nullptr && value[0] != '\0') parts.push_back(absl::StrCat(key, "=", value));
  };
  add("user", PQuser(conn));
  add("dbname", PQdb(conn));
  add("host", PQhost(conn));
  add("port", PQport(conn));
  return absl::StrCat("PostgreSQL ", absl::StrJoin(parts, " "));
}

std::string Trimmed(const char* message) {
  return std::string(absl::StripAsciiWhitespace(message != nullptr ? message : ""));
}

}  // namespace

absl::StatusOr<PostgresConnection> PostgresConnection::Connect(const std::string& conninfo,
                                                               const std::string& password_file) {
  RETURN_IF_ERROR(CheckNoPassword(conninfo));
  std::string password;
  if (!password_file.empty()) {
    ASSIGN_OR_RETURN(password, ReadPassword(password_file));
  }
  // The connection string's settings override the first two; the encoding and password
  // after it override it.
  std::vector<const char*> keywords = {"connect_timeout", "fallback_application_name", "dbname",
                                       "client_encoding"};
  std::vector<const char*> values = {"10", "vfsynth", conninfo.c_str(), "UTF8"};
  if (!password.empty()) {
    keywords.push_back("password");
    values.push_back(password.c_str());
  }
  keywords.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* conn = PQconnectdbParams(keywords.data(), values.data(), /*expand_dbname=*/1);
  std::fill(password.begin(), password.end(), '\0');
  if (conn == nullptr) return absl::ResourceExhaustedError("PostgreSQL: out of memory");
  PostgresConnection connection(conn, NameOf(conn));
  if (PQstatus(conn) != CONNECTION_OK) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", connection.name(), ": ", Trimmed(PQerrorMessage(conn))));
  }
  return connection;
}

PostgresConnection::PostgresConnection(PostgresConnection&& other) noexcept
    : conn_(std::exchange(other.conn_, nullptr)), name_(std::move(other.name_)) {}

PostgresConnection& PostgresConnection::operator=(PostgresConnection&& other) noexcept {
  if (this != &other) {
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = std::exchange(other.conn_, nullptr);
    name_ = std::move(other.name_);
  }
  return *this;
}

PostgresConnection::~PostgresConnection() {
  if (conn_ != nullptr) PQfinish(conn_);
}

absl::Status PostgresConnection::Execute(const std::string& sql, const std::string& what) {
  std::unique_ptr<PGresult, decltype(&PQclear)> result(
      PQexecParams(conn_, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0), &PQclear);
  const ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return absl::OkStatus();
  return Error(result.get(), what);
}

absl::StatusOr<std::string> PostgresConnection::QuotedIdentifier(const std::string& name,
                                                                 bool qualified) {
  std::vector<std::string> parts;
  if (qualified) {
    parts = absl::StrSplit(name, absl::MaxSplits('.', 1));
  } else {
    parts.push_back(name);
  }
  std::vector<std::string> quoted;
  for (const std::string& part : parts) {
    if (part.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" is not a table name"));
    }
    char* escaped = PQescapeIdentifier(conn_, part.c_str(), part.size());
    if (escaped == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("cannot quote the identifier \"", name,
                                                     "\": ", Trimmed(PQerrorMessage(conn_))));
    }
    quoted.emplace_back(escaped);
    PQfreemem(escaped);
  }
  return absl::StrJoin(quoted, ".");
}

absl::Status PostgresConnection::Error(const pg_result* result, const std::string& doing) const {
  const bool lost = PQstatus(conn_) != CONNECTION_OK;
  // The server's one-line message, not its multi-line report with the statement quoted.
  std::string message = result != nullptr
                            ? Trimmed(PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY))
                            : std::string();
  if (message.empty()) message = Trimmed(PQerrorMessage(conn_));
  const std::string text = absl::StrCat(name_, ": ", doing, " failed: ", message);
  if (lost) return absl::UnavailableError(absl::StrCat(text, " (the connection was lost)"));
  return absl::InvalidArgumentError(text);
}

}  // namespace vfsynth
