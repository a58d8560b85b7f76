#include "common/base/stream_seed.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>
#include <string>

namespace vfsynth {

std::array<unsigned char, 32> DeriveStreamKey(absl::string_view key, absl::string_view purpose,
                                              uint64_t counter) {
  std::string message(purpose);
  message.push_back('\0');  // separates purpose from counter unambiguously
  for (int i = 0; i < 8; ++i) message.push_back(static_cast<char>((counter >> (8 * i)) & 0xff));
  std::array<unsigned char, 32> digest{};
  unsigned int digest_len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest.data(),
       &digest_len);
  return digest;
}

uint64_t DeriveStreamSeed(absl::string_view key, absl::string_view purpose, uint64_t counter) {
  const std::array<unsigned char, 32> digest = DeriveStreamKey(key, purpose, counter);
  uint64_t seed = 0;
  for (int i = 0; i < 8; ++i) seed |= static_cast<uint64_t>(digest[i]) << (8 * i);
  return seed;
}

}  // namespace vfsynth
