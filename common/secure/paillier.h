#ifndef VFSYNTH_COMMON_SECURE_PAILLIER_H_
#define VFSYNTH_COMMON_SECURE_PAILLIER_H_

#include <openssl/bn.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vfsynth::secure {

// Owning handles for OpenSSL's big numbers. BN_clear_free: plaintexts and key parts are secret.
struct BnDeleter {
  void operator()(BIGNUM* b) const { BN_clear_free(b); }
};
using BnPtr = std::unique_ptr<BIGNUM, BnDeleter>;
struct BnCtxDeleter {
  void operator()(BN_CTX* c) const { BN_CTX_free(c); }
};
using BnCtxPtr = std::unique_ptr<BN_CTX, BnCtxDeleter>;

BnPtr NewBn();
// A BN_CTX for one thread (a BN_CTX must never be shared between threads).
BnCtxPtr NewBnCtx();

// Smallest modulus accepted from anyone: 2048 bits (about 112-bit security).
inline constexpr int kMinModulusBits = 2048;

// A Paillier public key with g = n + 1. Immutable and cheap to copy (shared state), and
// safe to use from several threads at once.
class PaillierPublicKey {
 public:
  // Refuses an even n or one of fewer than kMinModulusBits bits.
  static absl::StatusOr<PaillierPublicKey> FromModulus(const BIGNUM* n);
  // n as big-endian bytes; the length sets the modulus size (256 bytes for 2048 bits).
  static absl::StatusOr<PaillierPublicKey> Deserialize(absl::string_view bytes);
  std::string Serialize() const;

  const BIGNUM* n() const;
  const BIGNUM* n_squared() const;
  int modulus_bits() const;
  // Serialised sizes: n and n^2 at fixed length.
  size_t modulus_bytes() const;
  size_t ciphertext_bytes() const { return 2 * modulus_bytes(); }

  struct State;
  const State& state() const { return *state_; }

 private:
  explicit PaillierPublicKey(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

// An element of Z*_{n^2}: 0 < c < n^2 and gcd(c, n) = 1. Only produced by encryption, by
// homomorphic addition or by validation, so holding one means it has been checked.
class Ciphertext {
 public:
  // Checks range and coprimality against `key`.
  static absl::StatusOr<Ciphertext> FromBignum(const PaillierPublicKey& key, BnPtr value);

  Ciphertext(const Ciphertext& other);
  Ciphertext& operator=(const Ciphertext& other);
  Ciphertext(Ciphertext&&) noexcept = default;
  Ciphertext& operator=(Ciphertext&&) noexcept = default;

  const BIGNUM* value() const { return value_.get(); }

 private:
  friend struct CiphertextAccess;
  explicit Ciphertext(BnPtr value) : value_(std::move(value)) {}
  BnPtr value_;
};

// Why `c` is not a valid ciphertext under `key`, or OK.
absl::Status ValidateCiphertext(const PaillierPublicKey& key, const BIGNUM* c, BN_CTX* ctx);

// Enc(m) = (1 + m n) r^n mod n^2 with r uniform in Z*_n from OpenSSL's private CSPRNG;
// m must lie in [0, n).
absl::StatusOr<Ciphertext> Encrypt(const PaillierPublicKey& key, const BIGNUM* m, BN_CTX* ctx);

// Enc(a + b): a b mod n^2.
Ciphertext Add(const PaillierPublicKey& key, const Ciphertext& a, const Ciphertext& b, BN_CTX* ctx);

// A running homomorphic sum. Each Add is one Montgomery multiplication (no division); the
// R^-k the Montgomery products leave is removed once in Finish.
class CiphertextSum {
 public:
  explicit CiphertextSum(const PaillierPublicKey& key);
  void Add(const Ciphertext& c);
  // Enc(sum of the added plaintexts) times `extra` (e.g. fresh noise, which also
  // re-randomises the sum).
  Ciphertext Finish(const Ciphertext& extra);
  int64_t terms() const { return terms_; }

 private:
  PaillierPublicKey key_;
  BnCtxPtr ctx_;
  BnPtr acc_;
  int64_t terms_ = 0;
};

// The key pair of the party that encrypts its own records and decrypts the sums.
// Immutable after Generate; safe to use from several threads at once.
class PaillierPrivateKey {
 public:
  // n = p q from two random primes of modulus_bits / 2 bits (modulus_bits >= 2048).
  static absl::StatusOr<PaillierPrivateKey> Generate(int modulus_bits = kMinModulusBits);
  // The key of two distinct primes of equal size whose product has >= 2048 bits (a stored
  // key, or fixed test primes).
  static absl::StatusOr<PaillierPrivateKey> FromPrimes(const BIGNUM* p, const BIGNUM* q);
  // The two primes, each big-endian at modulus_bits / 16 bytes: the key a party keeps with
  // its durable state (secret: write it 0600). Deserialize checks it as FromPrimes does.
  std::string Serialize() const;
  static absl::StatusOr<PaillierPrivateKey> Deserialize(absl::string_view bytes);

  const PaillierPublicKey& public_key() const { return public_key_; }

  // Enc(m) with the same distribution as Encrypt, its r^n mod n^2 drawn as u^p mod p^2 and
  // v^q mod q^2 (1024-bit exponents mod 2048-bit moduli) and combined by CRT.
  absl::StatusOr<Ciphertext> EncryptCrt(const BIGNUM* m, BN_CTX* ctx) const;
  // m in [0, n), decrypted mod p and mod q and combined.
  absl::StatusOr<BnPtr> Decrypt(const Ciphertext& c, BN_CTX* ctx) const;

  struct State;

 private:
  PaillierPrivateKey(PaillierPublicKey public_key, std::shared_ptr<const State> state)
      : public_key_(std::move(public_key)), state_(std::move(state)) {}
  PaillierPublicKey public_key_;
  std::shared_ptr<const State> state_;
};

// Ciphertexts as one string of fixed-length big-endian blocks (key.ciphertext_bytes() each).
std::string SerializeCiphertexts(const PaillierPublicKey& key,
                                 const std::vector<Ciphertext>& ciphertexts);
absl::StatusOr<Ciphertext> DeserializeCiphertext(const PaillierPublicKey& key,
                                                 absl::string_view bytes);
// Refuses a string that is not exactly `expected_count` blocks, and any invalid block
// (naming its index).
absl::StatusOr<std::vector<Ciphertext>> DeserializeCiphertexts(const PaillierPublicKey& key,
                                                               absl::string_view bytes,
                                                               size_t expected_count);

}  // namespace vfsynth::secure

#endif  // VFSYNTH_COMMON_SECURE_PAILLIER_H_
