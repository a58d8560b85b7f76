#ifndef VFSYNTH_COMMON_DATA_SCHEMA_LIMITS_H_
#define VFSYNTH_COMMON_DATA_SCHEMA_LIMITS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// The largest registration_limits a curator accepts. A party checks its own schema
// against them before it dials: no curator could take a larger one.
inline v1::RegistrationLimits RegistrationLimitsCeiling() {
  v1::RegistrationLimits ceiling;
  ceiling.set_columns(10'000);
  ceiling.set_categories_per_column(100'000);
  ceiling.set_encoded_width(100'000);
  return ceiling;
}

// `schema`'s columns and each column's categories (or declared bins) within `limits`,
// counted on the message alone, so that nothing is built from a schema over them.
// INVALID_ARGUMENT naming `source`, the column and the setting otherwise.
absl::Status CheckSchemaWithinLimits(const v1::Schema& schema,
                                     const v1::RegistrationLimits& limits,
                                     const std::string& source);

// An encoded row `width` wide within `limits`.
absl::Status CheckEncodedWidthWithinLimits(int64_t width, const v1::RegistrationLimits& limits,
                                           const std::string& source);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DATA_SCHEMA_LIMITS_H_
