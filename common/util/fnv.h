#ifndef VFSYNTH_COMMON_UTIL_FNV_H_
#define VFSYNTH_COMMON_UTIL_FNV_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace vfsynth {

// FNV-1a 64 checksums: they detect torn or edited records; not a security measure.
// Both are part of on-disk formats (the privacy ledger, the reply journal): do not
// change their values. The offset basis is 1469598103934665603, the published one
// (14695981039346656037) without its last digit, as the ledger has always written it:
// as good a checksum, but its values are not those of reference FNV-1a tables.

// Byte by byte (the privacy ledger's lines; the reply journal's older frames).
uint64_t Fnv1a64(absl::string_view data);

// Over little-endian 64-bit words, the tail byte by byte: one dependent multiply per
// 8 bytes instead of per byte (the reply journal frames 64 KiB per critic step).
uint64_t Fnv1a64Words(absl::string_view data);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_UTIL_FNV_H_
