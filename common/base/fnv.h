#ifndef VFSYNTH_COMMON_BASE_FNV_H_
#define VFSYNTH_COMMON_BASE_FNV_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace vfsynth {

// FNV-1a 64 checksums: they detect torn or edited records; not a security measure.
// Both are part of on-disk formats (the privacy ledger, the reply journal): changing
// their values changes those formats' versions.

// Byte by byte, the published FNV-1a 64 (the privacy ledger's lines).
uint64_t Fnv1a64(absl::string_view data);

// Over little-endian 64-bit words, the tail byte by byte: one dependent multiply per
// 8 bytes instead of per byte (the reply journal frames 64 KiB per critic step).
uint64_t Fnv1a64Words(absl::string_view data);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_FNV_H_
