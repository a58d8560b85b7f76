// vfsynth-secure-count-bench: what secure cross-party counts would cost per record, for the
// two additively homomorphic schemes our stack offers: exponential ElGamal over ristretto255
// (libsodium, as the PSI) and Paillier with a 2048-bit modulus (OpenSSL BIGNUM). Prints the
// median microseconds of each operation and the derived cost of one column pair
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
  return 0;
}
