// vfsynth-secure-count-bench: what secure cross-party counts would cost per record, for the
// two additively homomorphic schemes our stack offers: exponential ElGamal over ristretto255
// (libsodium, as the PSI) and Paillier with a 2048-bit modulus (OpenSSL BIGNUM). Prints the
// median microseconds of each operation and the derived cost of one column pair; then the
// library's packed Paillier (common/secure) per record and the whole phase at Adult's size
// (docs/decisions/secure-counts.md). A measurement, not a test: timings depend on the machine.
//
// Usage: vfsynth-secure-count-bench [iterations, default 2000]
#include <openssl/bn.h>
#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/secure/cross_counts.h"
#include "common/secure/packed_counts.h"
#include "common/secure/paillier.h"
#include "tests/bench/seconds_of.h"

namespace vfsynth {
namespace {

using Clock = std::chrono::steady_clock;

// The median over `iterations` runs of `op`, in microseconds.
double MedianMicros(int iterations, const std::function<void()>& op) {
  std::vector<double> times;
  times.reserve(iterations);
  for (int i = 0; i < iterations; ++i) {
    const auto start = Clock::now();
    op();
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

struct ElGamalCosts {
  double encrypt_bit;  // (rG, bG + rH)
  double add;          // one encoded point added to another (a ciphertext is two)
  double log_ms;       // a count up to 2^20 from its point, baby-step giant-step
};

ElGamalCosts MeasureElGamal(int iterations) {
  unsigned char secret[32], h[32], g[32], r[32], c1[32], c2[32], sum[32];
  crypto_core_ristretto255_scalar_random(secret);
  crypto_scalarmult_ristretto255_base(h, secret);
  unsigned char one[32] = {1};
  crypto_scalarmult_ristretto255_base(g, one);
  ElGamalCosts costs;
  costs.encrypt_bit = MedianMicros(iterations, [&] {
    crypto_core_ristretto255_scalar_random(r);
    crypto_scalarmult_ristretto255_base(c1, r);
    if (crypto_scalarmult_ristretto255(c2, r, h) != 0) std::abort();
    crypto_core_ristretto255_add(c2, c2, g);
  });
  costs.add = MedianMicros(iterations, [&] { crypto_core_ristretto255_add(sum, c1, c2); });
  constexpr int kBaby = 1 << 10;
  constexpr int kLimit = 1 << 20;
  std::unordered_map<std::string, int> baby;
  unsigned char point[32] = {0};  // the identity's encoding
  for (int j = 0; j < kBaby; ++j) {
    baby.emplace(std::string(reinterpret_cast<char*>(point), 32), j);
    crypto_core_ristretto255_add(point, point, g);
  }
  unsigned char giant_scalar[32] = {0};
  const unsigned giant_value = kBaby;
  std::memcpy(giant_scalar, &giant_value, sizeof(giant_value));
  unsigned char giant[32];
  crypto_scalarmult_ristretto255_base(giant, giant_scalar);
  const auto start = Clock::now();
  int found = -1;
  for (unsigned x : {777777u, 123457u, 1000000u}) {
    unsigned char scalar[32] = {0};
    std::memcpy(scalar, &x, sizeof(x));
    unsigned char target[32];
    crypto_scalarmult_ristretto255_base(target, scalar);
    for (int i = 0; i < kLimit / kBaby; ++i) {
      const auto hit = baby.find(std::string(reinterpret_cast<char*>(target), 32));
      if (hit != baby.end()) {
        found = i * kBaby + hit->second;
        break;
      }
      crypto_core_ristretto255_sub(target, target, giant);
    }
    if (found != static_cast<int>(x)) std::abort();
  }
  costs.log_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count() / 3;
  return costs;
}

struct PaillierCosts {
  double encrypt;  // r^n mod n^2 (the message term g^m = 1 + mn is a multiplication)
  double add;      // one ciphertext times another mod n^2
};

PaillierCosts MeasurePaillier(int iterations) {
  BN_CTX* ctx = BN_CTX_new();
  BIGNUM *p = BN_new(), *q = BN_new(), *n = BN_new(), *n2 = BN_new(), *r = BN_new(), *c = BN_new(),
         *other = BN_new();
  BN_generate_prime_ex(p, 1024, 0, nullptr, nullptr, nullptr);
  BN_generate_prime_ex(q, 1024, 0, nullptr, nullptr, nullptr);
  BN_mul(n, p, q, ctx);
  BN_sqr(n2, n, ctx);
  BN_MONT_CTX* mont = BN_MONT_CTX_new();
  BN_MONT_CTX_set(mont, n2, ctx);
  PaillierCosts costs;
  costs.encrypt = MedianMicros(std::max(iterations / 20, 20), [&] {
    BN_rand_range(r, n);
    BN_mod_exp_mont(c, r, n, n2, ctx, mont);
  });
  BN_rand_range(other, n2);
  costs.add = MedianMicros(iterations, [&] { BN_mod_mul(c, c, other, n2, ctx); });
  for (BIGNUM* b : {p, q, n, n2, r, c, other}) BN_free(b);
  BN_MONT_CTX_free(mont);
  BN_CTX_free(ctx);
  return costs;
}

// The library (vfsynth_secure): CRT against plain encryption of a full 60-slot plaintext,
// EncryptRecords with 1 and 2 threads, B's sum and validation per record, A's decryption.
void MeasureLibrary(int iterations) {
  using namespace vfsynth::secure;
  auto key = PaillierPrivateKey::Generate();
  if (!key.ok()) std::abort();
  const PaillierPublicKey& pk = key->public_key();
  BnCtxPtr ctx = NewBnCtx();
  auto layout = SlotLayout::Create(std::vector<int>(6, 10), 2048);  // 60 slots, 1 ciphertext
  std::vector<int64_t> full(60, (int64_t{1} << kSlotBits) - 1);
  auto plaintexts = PackSlots(*layout, full);
  const BIGNUM* m = (*plaintexts)[0].get();
  const int enc_iterations = std::max(iterations / 20, 20);
  const double plain = MedianMicros(enc_iterations, [&] {
    if (!Encrypt(pk, m, ctx.get()).ok()) std::abort();
  });
  const double crt = MedianMicros(enc_iterations, [&] {
    if (!key->EncryptCrt(m, ctx.get()).ok()) std::abort();
  });
  std::printf(
      "library paillier-2048, 60 slots of %d bits: encrypt plain %.0f us, CRT %.0f us "
      "(%.2fx)\n",
      kSlotBits, plain, crt, plain / crt);

  const int records = std::max(iterations / 10, 40);
  std::vector<std::vector<int32_t>> columns(6, std::vector<int32_t>(records));
  for (int i = 0; i < records; ++i) {
    for (int c = 0; c < 6; ++c) columns[c][i] = (i * (c + 3)) % 10;
  }
  std::vector<Ciphertext> encrypted;
  double per_record[3] = {0, 0, 0};
  for (int threads : {1, 2}) {
    per_record[threads] = 1e6 / records * bench::SecondsOf([&] {
                            auto out = EncryptRecords(*key, *layout, columns, threads);
                            if (!out.ok()) std::abort();
                            encrypted = *std::move(out);
                          });
  }
  std::printf(
      "EncryptRecords (%d records, 1 ciphertext each): %.0f us a record with 1 thread, "
      "%.0f us with 2 threads\n",
      records, per_record[1], per_record[2]);

  CiphertextSum sum(pk);
  size_t next = 0;
  const double add = MedianMicros(iterations, [&] { sum.Add(encrypted[next++ % records]); });
  BnPtr product = NewBn();
  const double mod_mul = MedianMicros(iterations, [&] {
    BN_mod_mul(product.get(), encrypted[0].value(), encrypted[1].value(), pk.n_squared(),
               ctx.get());
  });
  const std::string wire = SerializeCiphertexts(pk, encrypted);
  const double validate = 1e6 / records * bench::SecondsOf([&] {
                            if (!DeserializeCiphertexts(pk, wire, records).ok()) std::abort();
                          });
  const double decrypt = MedianMicros(enc_iterations, [&] {
    if (!key->Decrypt(encrypted[0], ctx.get()).ok()) std::abort();
  });
  std::printf(
      "sum: %.2f us a ciphertext (Montgomery; BN_mod_mul %.2f us); receive (deserialise "
      "+ validate) %.0f us a ciphertext; decrypt (CRT) %.0f us a ciphertext\n",
      add, mod_mul, validate, decrypt);

  // Adult: 26,049 training records; A's ~60 slots in one ciphertext a record; B aggregates by
  // each of its 5 columns (about 10 values each): per column 26,049 additions and 10 noise
  // encryptions (plain, public key); A decrypts 50 ciphertexts.
  const double n = 26049, b_columns = 5, b_values = 10;
  const double encrypt_s1 = n * per_record[1] / 1e6, encrypt_s2 = n * per_record[2] / 1e6;
  const double receive_s = n * validate / 1e6;
  const double sum_s = b_columns * (n * add + b_values * plain) / 1e6;
  const double decrypt_s = b_columns * b_values * decrypt / 1e6;
  std::printf(
      "adult phase (26,049 records, 60 slots, B: 5 columns x 10 values): A encrypts "
      "%.0f s (1 thread) / %.0f s (2 threads), %.1f MB to B; B receives %.1f s, sums "
      "and noises %.1f s; A decrypts %.2f s\n",
      encrypt_s1, encrypt_s2, n * pk.ciphertext_bytes() / 1e6, receive_s, sum_s, decrypt_s);
}

}  // namespace
}  // namespace vfsynth

int main(int argc, char** argv) {
  if (sodium_init() < 0) return 1;
  const int iterations = argc > 1 ? std::max(100, std::atoi(argv[1])) : 2000;
  const vfsynth::ElGamalCosts eg = vfsynth::MeasureElGamal(iterations);
  const vfsynth::PaillierCosts pa = vfsynth::MeasurePaillier(iterations);
  std::printf(
      "elgamal-ristretto255: encrypt a bit %.1f us, point add %.1f us, log of a count <= 2^20 %.1f "
      "ms\n",
      eg.encrypt_bit, eg.add, eg.log_ms);
  std::printf("paillier-2048: encrypt %.1f us (64 slots of 32 bits), add %.1f us\n", pa.encrypt,
              pa.add);
  // One column of k categories at party A against one column at party B, per record: A
  // encrypts its one-hot (ElGamal: k bit ciphertexts; Paillier: one packed ciphertext for
  // k <= 64), B adds it into the bucket of the record's value (ElGamal: 2k point additions).
  for (int k : {2, 16, 64}) {
    std::printf(
        "k=%d per record: elgamal encrypt %.0f us + sum %.0f us; paillier encrypt %.0f us + sum "
        "%.0f us\n",
        k, k * eg.encrypt_bit, 2.0 * k * eg.add, pa.encrypt, pa.add);
  }
  vfsynth::MeasureLibrary(iterations);
  return 0;
}
