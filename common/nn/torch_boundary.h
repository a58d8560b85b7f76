#ifndef VFSYNTH_COMMON_NN_TORCH_BOUNDARY_H_
#define VFSYNTH_COMMON_NN_TORCH_BOUNDARY_H_

#include <functional>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vfsynth {

// Where a thread enters LibTorch work (an orchestrator, a gRPC handler, a helper job):
// runs `body`, turning an exception LibTorch throws into INTERNAL "LibTorch error: ...",
// so that no exception crosses a thread's entry or a Status-returning API. Callers need
// no LibTorch headers.
absl::Status CatchLibTorch(const std::function<absl::Status()>& body);

template <typename T>
absl::StatusOr<T> CatchLibTorch(const std::function<absl::StatusOr<T>()>& body) {
  std::optional<absl::StatusOr<T>> result;
  const absl::Status caught = CatchLibTorch([&]() -> absl::Status {
    result = body();
    return absl::OkStatus();
  });
  if (!caught.ok()) return caught;
  return *std::move(result);
}

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_TORCH_BOUNDARY_H_
