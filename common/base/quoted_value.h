#ifndef VFSYNTH_COMMON_BASE_QUOTED_VALUE_H_
#define VFSYNTH_COMMON_BASE_QUOTED_VALUE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace vfsynth {

// `value` in single quotes for an error message, cut to its first 64 bytes with its
// length when longer: a malformed field can be megabytes long.
std::string QuotedValue(absl::string_view value);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_QUOTED_VALUE_H_
