#ifndef VFSYNTH_COMMON_NET_GRPC_STATUS_H_
#define VFSYNTH_COMMON_NET_GRPC_STATUS_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace vfsynth {

// absl::Status -> grpc::Status (same code and message).
grpc::Status ToGrpcStatus(const absl::Status& status);

// grpc::Status -> absl::Status with the same code, the message prefixed "<what>: ".
absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view what);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NET_GRPC_STATUS_H_
