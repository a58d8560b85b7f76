#ifndef VFSYNTH_COMMON_POSTGRES_POSTGRES_SOURCE_H_
#define VFSYNTH_COMMON_POSTGRES_POSTGRES_SOURCE_H_

// A party's table read from PostgreSQL, as text rows for the same validation and
// encoding as a CSV's (common/data/party_data.h).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

struct PostgresReadOptions {
  int64_t fetch_rows = 1000;  // rows per FETCH: what libpq holds at a time
  // Called with the rows read so far after each batch (tests end the session here).
  std::function<void(int64_t)> after_fetch;
};

// How errors name the source: "postgres:<table>" or "postgres:query".
std::string PostgresSourceName(const v1::PostgresSource& source);

// Reads `columns` of source.table (in the order of its first column, the id), or every
// column of source.query's result, in one read-only transaction through a server-side
// cursor. NULL reads as "" (a missing value, like an empty CSV cell). line_numbers are
// the rows' 1-based positions in the result. Any failure, the server going away
// included, returns an error and no rows.
absl::StatusOr<CsvTable> ReadPostgresRows(const v1::PostgresSource& source,
                                          const std::vector<std::string>& columns,
                                          const PostgresReadOptions& options = {});

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_POSTGRES_POSTGRES_SOURCE_H_
