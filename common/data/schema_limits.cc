#include "common/data/schema_limits.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/quoted_value.h"

namespace vfsynth {

absl::Status CheckSchemaWithinLimits(const v1::Schema& schema,
                                     const v1::RegistrationLimits& limits,
                                     const std::string& source) {
  if (schema.columns_size() > limits.columns()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", schema.columns_size(), " columns, more than ",
                     "registration_limits.columns (", limits.columns(), ")"));
  }
  for (const v1::Column& column : schema.columns()) {
    const int values = std::max(column.categories_size(), column.bins_size());
    if (values > limits.categories_per_column()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": column ", QuotedValue(column.name()), " declares ", values,
          column.categories_size() >= column.bins_size() ? " categories" : " bins",
          ", more than registration_limits.categories_per_column (",
          limits.categories_per_column(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEncodedWidthWithinLimits(int64_t width, const v1::RegistrationLimits& limits,
                                           const std::string& source) {
  if (width <= limits.encoded_width()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(source, ": the encoded row is ", width,
                                                 " wide, more than registration_limits."
                                                 "encoded_width (",
                                                 limits.encoded_width(), ")"));
}

}  // namespace vfsynth
