#ifndef VFSYNTH_COMMON_SECURE_LENGTH_PREFIXED_H_
#define VFSYNTH_COMMON_SECURE_LENGTH_PREFIXED_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

// The unambiguous encoding the relayed lists are made of: big-endian uint64s and strings
// prefixed with their length as one. The Get functions consume from `in` and return false
// on truncated input.
namespace vfsynth::secure {

inline void PutUint64(std::string& out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline bool GetUint64(absl::string_view& in, uint64_t& v) {
  if (in.size() < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  in.remove_prefix(8);
  return true;
}

inline void PutString(std::string& out, absl::string_view s) {
  PutUint64(out, s.size());
  out.append(s.data(), s.size());
}

inline bool GetString(absl::string_view& in, std::string& s) {
  uint64_t size = 0;
  if (!GetUint64(in, size) || in.size() < size) return false;
  s.assign(in.data(), size);
  in.remove_prefix(size);
  return true;
}

}  // namespace vfsynth::secure

#endif  // VFSYNTH_COMMON_SECURE_LENGTH_PREFIXED_H_
