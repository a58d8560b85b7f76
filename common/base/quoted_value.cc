#include "common/base/quoted_value.h"

#include "absl/strings/str_cat.h"

namespace vfsynth {

std::string QuotedValue(absl::string_view value) {
  constexpr size_t kShown = 64;
  if (value.size() <= kShown) return absl::StrCat("'", value, "'");
  return absl::StrCat("'", value.substr(0, kShown), "...' (", value.size(), " bytes)");
}

}  // namespace vfsynth
