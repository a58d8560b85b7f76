#ifndef VFSYNTH_COMMON_BASE_TEXT_ENCODING_H_
#define VFSYNTH_COMMON_BASE_TEXT_ENCODING_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace vfsynth {

// INVALID_ARGUMENT naming `source` when `bytes` are UTF-16 or UTF-32 rather than UTF-8
// (the zero bytes those encodings give ASCII text, named by the byte-order mark or
// their pattern): "file is UTF-16; save it as UTF-8". Other text with a NUL byte is
// refused too, naming its offset. What the readers would otherwise report is a
// baffling parse error.
absl::Status CheckUtf8Text(absl::string_view bytes, const std::string& source);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_TEXT_ENCODING_H_
