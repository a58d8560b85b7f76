#ifndef VFSYNTH_CLIENT_CORE_PARTY_TABLE_H_
#define VFSYNTH_CLIENT_CORE_PARTY_TABLE_H_

// A party daemon's table from the source its config names: the CSV `data` or `postgres`.
// The source is local configuration only; nothing the curator sends reaches it.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/data/party_data.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// How logs and errors name the party's table: the CSV path or "postgres:<table>".
std::string PartyTableName(const v1::PartyConfig& config);

// Reads, validates and encodes the party's table (EncodePartyTable), and logs the rows
// skipped and values clipped.
absl::StatusOr<PartyData> LoadPartyTable(const v1::PartyConfig& config, int64_t grid_records = -1);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_PARTY_TABLE_H_
