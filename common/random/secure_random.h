#ifndef VFSYNTH_COMMON_RANDOM_SECURE_RANDOM_H_
#define VFSYNTH_COMMON_RANDOM_SECURE_RANDOM_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth {

// A cryptographically secure random stream: the ChaCha20 keystream (OpenSSL EVP) of a
// 256-bit key. Every random value a party's privacy rests on comes from one: the noise
// of every DP release (fresh keys from the OS, one stream per purpose), and the
// secret-derived streams (real batches, shard assignment, network initialisation), keyed
// with the whole 256-bit HMAC of their secret. Observing any number of outputs reveals
// neither the key nor other outputs, unlike a Mersenne Twister, whose state ~10^3 outputs fix.
//
// Move-only: a copy would repeat the stream, and noise drawn twice cancels.
// Never serialise a stream or its key into anything that leaves its owner.
class SecureRandom {
 public:
  static constexpr size_t kKeyBytes = 32;
  using Key = std::array<unsigned char, kKeyBytes>;

  // A stream under a fresh key from the OS's generator (OpenSSL RAND_bytes).
  static absl::StatusOr<SecureRandom> FromOsEntropy();
  // The stream of (secret, purpose, counter): keyed by HMAC-SHA256(secret, purpose ‖ 0 ‖
  // counter as 8 little-endian bytes), all 256 bits. Anyone holding `secret` draws the
  // same values; nobody else can predict them.
  static SecureRandom Derived(absl::string_view secret, absl::string_view purpose,
                              uint64_t counter);
  static SecureRandom FromKey(const Key& key);

  SecureRandom(SecureRandom&& other) noexcept;
  SecureRandom& operator=(SecureRandom&& other) noexcept;
  SecureRandom(const SecureRandom&) = delete;
  SecureRandom& operator=(const SecureRandom&) = delete;
  ~SecureRandom();

  void Fill(unsigned char* out, size_t bytes);
  uint64_t NextUint64();
  // Uniform on {0, ..., n - 1} without modulo bias; n >= 1.
  uint64_t UniformBelow(uint64_t n);
  // Uniform on (0, 1) with 53 random bits: (k + 0.5) / 2^53, never 0 or 1.
  double Uniform();
  // Standard normal in double precision (Box-Muller on two 53-bit uniforms; its tail
  // reaches beyond 8.5 sigma, where float32 Box-Muller stops at 5.77).
  double Gaussian();

 private:
  struct Cipher;
  explicit SecureRandom(const Key& key);
  // Writes the next `bytes` of the keystream to `out`, bypassing the buffer.
  void Keystream(unsigned char* out, size_t bytes);

  std::unique_ptr<Cipher> cipher_;
  std::array<unsigned char, 4096> buffer_{};
  size_t used_ = 0;
  std::optional<double> spare_gaussian_;
};

// A fresh 256-bit secret from the OS, as 64 lower-case hex characters.
absl::StatusOr<std::string> NewHexSecret();
// Whether `text` has NewHexSecret's form.
bool IsHexSecret(absl::string_view text);
// A secret NewHexSecret made, read back from `path` (kept there with WritePrivateFile);
// FAILED_PRECONDITION naming the file and `why` it is needed when missing or damaged.
absl::StatusOr<std::string> ReadHexSecret(const std::string& path, absl::string_view why);

// Resuming, ReadHexSecret(path, why); otherwise NewHexSecret() (the caller keeps it at
// `path` once it commits to the run).
absl::StatusOr<std::string> ResumeOrNewHexSecret(bool resume, const std::string& path,
                                                 absl::string_view why);

// The standard normal pair Box-Muller maps two uniforms in (0, 1) to.
std::array<double, 2> BoxMuller(double u1, double u2);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_RANDOM_SECURE_RANDOM_H_
