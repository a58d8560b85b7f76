#ifndef VFSYNTH_COMMON_PROTOCOL_PROTOCOL_VERSION_H_
#define VFSYNTH_COMMON_PROTOCOL_PROTOCOL_VERSION_H_

#include <cstdint>

namespace vfsynth {

// The curator-party protocol (proto/vfsynth/v1/curator.proto, docs/protocol.md): sent by a
// party at registration and in its Train stream's hello; a curator and a party speaking
// different versions refuse each other.
inline constexpr uint32_t kProtocolVersion = 9;

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PROTOCOL_PROTOCOL_VERSION_H_
