#ifndef VFSYNTH_CLIENT_GRPC_STATUS_CLIENT_H_
#define VFSYNTH_CLIENT_GRPC_STATUS_CLIENT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// Asks the curator at `address` ("host:port") for its status over mTLS (any
// certificate signed by the run's CA: a party's or deploy/gen-certs.sh's operator
// certificate). `plaintext` is for loopback tests against a plaintext curator.
absl::StatusOr<v1::StatusResponse> FetchCuratorStatus(const std::string& address,
                                                      const v1::TlsConfig& tls, bool plaintext,
                                                      absl::Duration timeout);

// The status as a short human-readable report (run, progress, privacy, parties).
std::string FormatStatusReport(const v1::StatusResponse& status);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_GRPC_STATUS_CLIENT_H_
