#include "common/random/secure_random.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/stream_seed.h"

namespace vfsynth {
namespace {

// A keystream that cannot be produced means OpenSSL itself is broken; continuing would
// release noise that is not random, so the process stops.
[[noreturn]] void CipherFailure(const char* what) {
  std::fprintf(stderr, "vfsynth: ChaCha20 keystream failed (%s); stopping before any release\n",
               what);
  std::abort();
}

}  // namespace

struct SecureRandom::Cipher {
  EVP_CIPHER_CTX* ctx = nullptr;
  ~Cipher() { EVP_CIPHER_CTX_free(ctx); }
};

SecureRandom::SecureRandom(const Key& key) : cipher_(std::make_unique<Cipher>()) {
  cipher_->ctx = EVP_CIPHER_CTX_new();
  // Block counter 0 and nonce 0: each key is used for one stream only.
  const unsigned char iv[16] = {0};
  if (cipher_->ctx == nullptr ||
      EVP_EncryptInit_ex(cipher_->ctx, EVP_chacha20(), nullptr, key.data(), iv) != 1) {
    CipherFailure("init");
  }
  used_ = buffer_.size();
}

SecureRandom::SecureRandom(SecureRandom&& other) noexcept = default;
SecureRandom& SecureRandom::operator=(SecureRandom&& other) noexcept = default;
SecureRandom::~SecureRandom() { OPENSSL_cleanse(buffer_.data(), buffer_.size()); }

absl::StatusOr<SecureRandom> SecureRandom::FromOsEntropy() {
  Key key;
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
    return absl::UnavailableError(
        "the OS random generator (RAND_bytes) failed to key a noise stream");
  }
  SecureRandom stream(key);
  OPENSSL_cleanse(key.data(), key.size());
  return stream;
}

SecureRandom SecureRandom::Derived(absl::string_view secret, absl::string_view purpose,
                                   uint64_t counter) {
  Key key = DeriveStreamKey(secret, purpose, counter);
  SecureRandom stream(key);
  OPENSSL_cleanse(key.data(), key.size());
  return stream;
}

SecureRandom SecureRandom::FromKey(const Key& key) { return SecureRandom(key); }

void SecureRandom::Keystream(unsigned char* out, size_t bytes) {
  // The keystream is the encryption of zeros.
  std::memset(out, 0, bytes);
  int written = 0;
  if (EVP_EncryptUpdate(cipher_->ctx, out, &written, out, static_cast<int>(bytes)) != 1 ||
      written != static_cast<int>(bytes)) {
    CipherFailure("update");
  }
}

void SecureRandom::Fill(unsigned char* out, size_t bytes) {
  while (bytes > 0) {
    if (used_ == buffer_.size() && bytes >= buffer_.size()) {
      // Whole buffers' worth goes straight into `out`: the same stream, one copy less.
      const size_t direct = bytes - bytes % buffer_.size();
      Keystream(out, direct);
      out += direct;
      bytes -= direct;
      continue;
    }
    if (used_ == buffer_.size()) {
      Keystream(buffer_.data(), buffer_.size());
      used_ = 0;
    }
    const size_t take = std::min(bytes, buffer_.size() - used_);
    std::memcpy(out, buffer_.data() + used_, take);
    // A byte handed out is not kept where a later reader of this object could find it.
    std::memset(buffer_.data() + used_, 0, take);
    used_ += take;
    out += take;
    bytes -= take;
  }
}

uint64_t SecureRandom::NextUint64() {
  unsigned char bytes[8];
  Fill(bytes, sizeof(bytes));
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  return value;
}

uint64_t SecureRandom::UniformBelow(uint64_t n) {
  if (n <= 1) return 0;
  const uint64_t threshold = (0 - n) % n;  // (2^64 - n) mod n: draws below it are rejected
  while (true) {
    const uint64_t draw = NextUint64();
    if (draw >= threshold) return draw % n;
  }
}

double SecureRandom::Uniform() {
  return (static_cast<double>(NextUint64() >> 11) + 0.5) * 0x1.0p-53;
}

absl::StatusOr<std::string> NewHexSecret() {
  absl::StatusOr<SecureRandom> os = SecureRandom::FromOsEntropy();
  if (!os.ok()) return os.status();
  unsigned char bytes[SecureRandom::kKeyBytes];
  os->Fill(bytes, sizeof(bytes));
  std::string hex = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
  OPENSSL_cleanse(bytes, sizeof(bytes));
  return hex;
}

absl::StatusOr<std::string> ResumeOrNewHexSecret(bool resume, const std::string& path,
                                                 absl::string_view why) {
  if (!resume) return NewHexSecret();
  return ReadHexSecret(path, why);
}

bool IsHexSecret(absl::string_view text) {
  return text.size() == 2 * SecureRandom::kKeyBytes &&
         text.find_first_not_of("0123456789abcdef") == absl::string_view::npos;
}

absl::StatusOr<std::string> ReadHexSecret(const std::string& path, absl::string_view why) {
  absl::StatusOr<std::string> saved = ReadFile(path);
  if (!saved.ok() || !IsHexSecret(*saved)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--resume: ", path, " is missing or damaged (",
                     saved.ok() ? "not 64 hex digits" : saved.status().message(), "); ", why));
  }
  return saved;
}

std::array<double, 2> BoxMuller(double u1, double u2) {
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * M_PI * u2;
  return {radius * std::cos(angle), radius * std::sin(angle)};
}

double SecureRandom::Gaussian() {
  if (spare_gaussian_.has_value()) {
    const double value = *spare_gaussian_;
    spare_gaussian_.reset();
    return value;
  }
  const double u1 = Uniform();
  const double u2 = Uniform();
  const std::array<double, 2> pair = BoxMuller(u1, u2);
  spare_gaussian_ = pair[1];
  return pair[0];
}

}  // namespace vfsynth
