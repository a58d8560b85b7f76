#ifndef VFSYNTH_COMMON_POSTGRES_POSTGRES_TARGET_H_
#define VFSYNTH_COMMON_POSTGRES_POSTGRES_TARGET_H_

// The published table written into a new PostgreSQL table.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/data/csv.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// A column of the new table: its SQL type and the text that is written as NULL.
struct PostgresColumn {
  std::string type = "text";
  std::string null_text;
};

// The columns of `header` as the schemas declare them: categorical text, integer bigint,
// continuous double precision, their missing token NULL; a column no schema has is text.
std::vector<PostgresColumn> PostgresColumnsFor(const std::vector<std::string>& header,
                                               const std::vector<v1::Schema>& schemas);

// OK if target.table could be created now: the server answers and no such table exists.
absl::Status CheckPostgresTarget(const v1::PostgresTarget& target);

// Creates target.table with `columns` (one per header column) and copies every row into
// it, in one transaction: on any error nothing is left behind. An existing table is
// refused, never changed.
absl::Status WritePostgresTable(const v1::PostgresTarget& target, const CsvTable& table,
                                const std::vector<PostgresColumn>& columns);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_POSTGRES_POSTGRES_TARGET_H_
