#ifndef VFSYNTH_COMMON_BASE_JSON_KEYS_H_
#define VFSYNTH_COMMON_BASE_JSON_KEYS_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace vfsynth {

// A key given twice in one JSON object.
struct DuplicateJsonKey {
  std::string path;  // e.g. "privacy", "parties[1].name"
  int line = 0;      // of the second occurrence, from 1
  int first_line = 0;
};

// The first key that appears twice in one object of `json` (protobuf's parser keeps the
// last silently, so a second block could quietly replace the first). "run_id" and
// "runId" are the same key: the parser takes both spellings. nullopt if there is none,
// or if the text is malformed (the parser names that).
std::optional<DuplicateJsonKey> FindDuplicateJsonKey(absl::string_view json);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_JSON_KEYS_H_
