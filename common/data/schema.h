#ifndef VFSYNTH_COMMON_DATA_SCHEMA_H_
#define VFSYNTH_COMMON_DATA_SCHEMA_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

enum class ColumnKind { kCategorical, kContinuous, kInteger };

inline constexpr char kDefaultMissingToken[] = "?";

absl::StatusOr<ColumnKind> ParseColumnKind(absl::string_view type);

// Checks a schema for internal consistency: unique non-empty names, known types,
// categories present and unique for categoricals, finite min < max for numerics,
// strictly increasing bins inside the bounds. Errors name the offending column.
absl::Status ValidateSchema(const v1::Schema& schema);

// Parses and validates a schema JSON text / file.
absl::StatusOr<v1::Schema> ParseSchema(const std::string& json, const std::string& source);
absl::StatusOr<v1::Schema> LoadSchema(const std::string& path);

// The missing-value token in effect for a column.
std::string MissingToken(const v1::Schema& schema, const v1::Column& column);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_SCHEMA_H_
