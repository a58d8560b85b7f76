#ifndef VFSYNTH_COMMON_BASE_WRITABLE_DIRECTORY_H_
#define VFSYNTH_COMMON_BASE_WRITABLE_DIRECTORY_H_

#include <string>

#include "absl/status/status.h"

namespace vfsynth {

// The directory that will hold the file `path` (the setting `what`) exists and takes a
// new file now: checked at a run's start, so that a run does not spend its privacy
// budget and then fail to write its result. FAILED_PRECONDITION naming the directory and
// the reason otherwise; `path` itself must not be a directory.
absl::Status CheckWritableDirectoryFor(const std::string& path, const std::string& what);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_WRITABLE_DIRECTORY_H_
