#ifndef VFSYNTH_COMMON_DATA_SCHEMA_DRAFT_H_
#define VFSYNTH_COMMON_DATA_SCHEMA_DRAFT_H_

// A starting schema and party layout drafted from a joint CSV (`vfsynth schema draft`),
// for a person to review: everything a schema declares is published to the curator and
// every party, so it must be public knowledge, not something read off the data.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

struct SchemaDraftOptions {
  int parties = 1;  // columns cut into this many contiguous groups
  std::string missing_token = "?";
  // A categorical value seen fewer times than this is flagged: listing it publishes
  // that it occurs in the data.
  int rare_count = 5;
  // More distinct values than this in a non-numeric column: flagged as an id or free
  // text, still drafted as categorical.
  int max_categories = 100;
};

struct SchemaDraft {
  v1::Schema schema;
  v1::PartiesFile parties;
  std::vector<std::string> warnings;  // one line each, naming the column
};

// Numeric columns (every present value a number) become "integer" or "continuous" with
// bounds rounded outward to round numbers (one significant step of the range: 17..90 ->
// 10..90); other columns "categorical" with their values sorted. Columns with missing
// values are nullable. INVALID_ARGUMENT for an empty table, fewer columns than parties,
// or a column with no value at all.
absl::StatusOr<SchemaDraft> DraftSchema(const CsvTable& table, const SchemaDraftOptions& options);

// The bounds [lo, hi] widened to multiples of the power of ten below hi - lo (exactly
// lo and hi when they are equal).
std::pair<double, double> RoundBoundsOutward(double lo, double hi);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_SCHEMA_DRAFT_H_
