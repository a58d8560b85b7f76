#include "common/nn/torch_boundary.h"

#include <c10/util/Exception.h>

#include "absl/strings/str_cat.h"

namespace vfsynth {

absl::Status CatchLibTorch(const std::function<absl::Status()>& body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("LibTorch error: ", e.what_without_backtrace()));
  }
}

}  // namespace vfsynth
