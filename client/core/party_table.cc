#include "client/core/party_table.h"

#include <spdlog/spdlog.h>

#include "common/base/status_macros.h"
#include "common/postgres/postgres_source.h"

namespace vfsynth {

std::string PartyTableName(const v1::PartyConfig& config) {
  return config.has_postgres() ? PostgresSourceName(config.postgres()) : config.data();
}

absl::StatusOr<PartyData> LoadPartyTable(const v1::PartyConfig& config, int64_t grid_records) {
  absl::StatusOr<PartyData> data;
  if (config.has_postgres()) {
    ASSIGN_OR_RETURN(v1::Schema schema, LoadPartySchema(config.schema()));
    ASSIGN_OR_RETURN(const CsvTable table,
                     ReadPostgresRows(config.postgres(), PartyColumns(schema)));
    data = EncodePartyTable(table, PartyTableName(config), std::move(schema),
                            config.skip_bad_rows(), grid_records);
  } else {
    data = LoadPartyData(config.data(), config.schema(), config.skip_bad_rows(), grid_records);
  }
  if (!data.ok()) return data.status();
  spdlog::info("read {} rows from {}", data->encoded.rows, PartyTableName(config));
  if (data->skipped_rows > 0) spdlog::warn("skipped {} malformed rows", data->skipped_rows);
  if (data->clipped_values > 0)
    spdlog::warn("clipped {} values to the schema bounds", data->clipped_values);
  return data;
}

}  // namespace vfsynth
