#ifndef VFSYNTH_COMMON_BASE_SHA256_H_
#define VFSYNTH_COMMON_BASE_SHA256_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace vfsynth {

// SHA-256 as 64 lower-case hex characters.
std::string Sha256Hex(absl::string_view data);

// Incremental SHA-256 over several pieces; each piece is length-prefixed, so
// ("ab", "c") and ("a", "bc") give different digests.
class Sha256Builder {
 public:
  Sha256Builder();
  ~Sha256Builder();
  Sha256Builder& Add(absl::string_view piece);
  std::string Hex();  // finishes; call once

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_SHA256_H_
