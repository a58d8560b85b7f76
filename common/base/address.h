#ifndef VFSYNTH_COMMON_BASE_ADDRESS_H_
#define VFSYNTH_COMMON_BASE_ADDRESS_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace vfsynth {

// Splits "host:port" or "[v6]:port" with a port in [min_port, 65535]; INVALID_ARGUMENT
// naming `what` otherwise (a port out of range would wrap silently in the socket layer).
absl::StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& address,
                                                          const std::string& what,
                                                          int min_port = 0);

// True for localhost, ::1 and 127.0.0.0/8.
bool IsLoopbackHost(const std::string& host);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_ADDRESS_H_
