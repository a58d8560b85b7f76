#ifndef VFSYNTH_COMMON_BASE_ADDRESS_H_
#define VFSYNTH_COMMON_BASE_ADDRESS_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vfsynth {

// Splits "host:port" or "[v6]:port" with a port in [min_port, 65535]; INVALID_ARGUMENT
// naming `what` otherwise (a port out of range would wrap silently in the socket layer).
absl::StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& address,
                                                          const std::string& what,
                                                          int min_port = 0);

// True for localhost and the loopback IP literals (127.0.0.0/8, ::1, ::ffff:127.x.y.z).
// A name such as "127.example.org" is not loopback: DNS may send it anywhere.
bool IsLoopbackHost(const std::string& host);

// The address `what` of a plaintext (no TLS) link: a host:port whose host is loopback,
// since without TLS anyone on the path reads and forges every message.
absl::Status CheckPlaintextAddress(const std::string& address, const std::string& what);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_ADDRESS_H_
