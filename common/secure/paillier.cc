#include "common/secure/paillier.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace vfsynth::secure {

struct BnMontDeleter {
  void operator()(BN_MONT_CTX* m) const { BN_MONT_CTX_free(m); }
};
using BnMontPtr = std::unique_ptr<BN_MONT_CTX, BnMontDeleter>;

struct PaillierPublicKey::State {
  BnPtr n;
  BnPtr n_squared;
  BnMontPtr mont_n_squared;  // read-only after construction, so shareable across threads
  size_t modulus_bytes = 0;
};

struct PaillierPrivateKey::State {
  BnPtr p, q, p_squared, q_squared;
  BnMontPtr mont_p_squared, mont_q_squared;
  BnPtr q_squared_inv_mod_p2;  // CRT combination mod n^2
  BnPtr p_minus_1, q_minus_1;  // decryption exponents
  BnPtr h_p, h_q;              // L_p(g^(p-1) mod p^2)^-1 mod p, and for q
  BnPtr q_inv_mod_p;           // CRT combination mod n
};

struct CiphertextAccess {
  static Ciphertext Make(BnPtr value) { return Ciphertext(std::move(value)); }
};

namespace {

absl::Status OpenSslError(absl::string_view what) {
  return absl::InternalError(absl::StrCat("OpenSSL failed to ", what));
}

BnPtr Dup(const BIGNUM* b) { return BnPtr(BN_dup(b)); }

BnMontPtr NewMont(const BIGNUM* modulus, BN_CTX* ctx) {
  BnMontPtr mont(BN_MONT_CTX_new());
  if (mont == nullptr || BN_MONT_CTX_set(mont.get(), modulus, ctx) != 1) return nullptr;
  return mont;
}

// A uniform r in [1, range) with r mod `factor` != 0, from OpenSSL's private DRBG. With
// range = n and factor = n this is Z*_n up to the r sharing a prime with n, which has
// probability about 2^-1023 and would amount to factoring n; with range p^2 and factor p it
// is exactly Z*_{p^2}. No gcd: OpenSSL's constant-time gcd costs more than the encryption.
absl::StatusOr<BnPtr> RandomUnit(const BIGNUM* range, const BIGNUM* factor, BN_CTX* ctx) {
  BnPtr r = NewBn();
  BnPtr rem = NewBn();
  for (;;) {
    if (BN_priv_rand_range(r.get(), range) != 1 || BN_nnmod(rem.get(), r.get(), factor, ctx) != 1) {
      return OpenSslError("draw Paillier randomness");
    }
    if (!BN_is_zero(rem.get())) return r;
  }
}

// (1 + m n) mod n^2, given m in [0, n).
absl::StatusOr<BnPtr> MessageTerm(const PaillierPublicKey& key, const BIGNUM* m, BN_CTX* ctx) {
  if (BN_is_negative(m) || BN_cmp(m, key.n()) >= 0) {
    return absl::InvalidArgumentError("Paillier plaintext outside [0, n)");
  }
  BnPtr gm = NewBn();
  if (BN_mul(gm.get(), m, key.n(), ctx) != 1 || BN_add_word(gm.get(), 1) != 1) {
    return OpenSslError("form g^m");
  }
  return gm;
}

// L_p(x) = (x - 1) / p.
absl::StatusOr<BnPtr> L(const BIGNUM* x, const BIGNUM* p, BN_CTX* ctx) {
  BnPtr t = Dup(x);
  BnPtr out = NewBn();
  if (t == nullptr || BN_sub_word(t.get(), 1) != 1 ||
      BN_div(out.get(), nullptr, t.get(), p, ctx) != 1) {
    return OpenSslError("compute L");
  }
  return out;
}

// Constant-time x^e mod m (e is secret-derived).
absl::Status ModExpSecret(BIGNUM* out, const BIGNUM* x, const BIGNUM* e, const BIGNUM* m,
                          BN_MONT_CTX* mont, BN_CTX* ctx) {
  if (BN_mod_exp_mont_consttime(out, x, e, m, ctx, mont) != 1) {
    return OpenSslError("exponentiate");
  }
  return absl::OkStatus();
}

}  // namespace

BnPtr NewBn() { return BnPtr(BN_new()); }
BnCtxPtr NewBnCtx() { return BnCtxPtr(BN_CTX_new()); }

absl::StatusOr<PaillierPublicKey> PaillierPublicKey::FromModulus(const BIGNUM* n) {
  if (n == nullptr || BN_is_negative(n)) {
    return absl::InvalidArgumentError("Paillier public key: no modulus, or a negative one");
  }
  if (BN_num_bits(n) < kMinModulusBits) {
    return absl::InvalidArgumentError(absl::StrCat("Paillier public key: modulus of ",
                                                   BN_num_bits(n), " bits, at least ",
                                                   kMinModulusBits, " required"));
  }
  if (!BN_is_odd(n)) return absl::InvalidArgumentError("Paillier public key: even modulus");
  BnCtxPtr ctx = NewBnCtx();
  auto state = std::make_shared<State>();
  state->n = Dup(n);
  state->n_squared = NewBn();
  if (ctx == nullptr || state->n == nullptr || BN_sqr(state->n_squared.get(), n, ctx.get()) != 1) {
    return OpenSslError("square the modulus");
  }
  state->mont_n_squared = NewMont(state->n_squared.get(), ctx.get());
  if (state->mont_n_squared == nullptr) return OpenSslError("set up Montgomery arithmetic");
  state->modulus_bytes = static_cast<size_t>(BN_num_bytes(n));
  return PaillierPublicKey(std::move(state));
}

absl::StatusOr<PaillierPublicKey> PaillierPublicKey::Deserialize(absl::string_view bytes) {
  BnPtr n(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()),
                    static_cast<int>(bytes.size()), nullptr));
  if (n == nullptr) return OpenSslError("read a public key");
  return FromModulus(n.get());
}

std::string PaillierPublicKey::Serialize() const {
  std::string out(modulus_bytes(), '\0');
  BN_bn2binpad(n(), reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size()));
  return out;
}

const BIGNUM* PaillierPublicKey::n() const { return state_->n.get(); }
const BIGNUM* PaillierPublicKey::n_squared() const { return state_->n_squared.get(); }
int PaillierPublicKey::modulus_bits() const { return BN_num_bits(state_->n.get()); }
size_t PaillierPublicKey::modulus_bytes() const { return state_->modulus_bytes; }

Ciphertext::Ciphertext(const Ciphertext& other) : value_(Dup(other.value_.get())) {}

Ciphertext& Ciphertext::operator=(const Ciphertext& other) {
  if (this != &other) value_ = Dup(other.value_.get());
  return *this;
}

absl::Status ValidateCiphertext(const PaillierPublicKey& key, const BIGNUM* c, BN_CTX* ctx) {
  if (c == nullptr) return absl::InvalidArgumentError("Paillier ciphertext missing");
  if (BN_is_negative(c) || BN_is_zero(c)) {
    return absl::InvalidArgumentError("Paillier ciphertext is zero or negative");
  }
  if (BN_cmp(c, key.n_squared()) >= 0) {
    return absl::InvalidArgumentError("Paillier ciphertext is not below n^2");
  }
  // gcd(c, n) = gcd(c mod n, n) = 1 iff c mod n is invertible mod n. The variable-time
  // inversion is fine here (c is public) and about 20x faster than OpenSSL's constant-time gcd.
  BnPtr reduced = NewBn();
  BnPtr inverse = NewBn();
  if (BN_nnmod(reduced.get(), c, key.n(), ctx) != 1) return OpenSslError("reduce a ciphertext");
  if (BN_mod_inverse(inverse.get(), reduced.get(), key.n(), ctx) == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        "Paillier ciphertext shares a factor with n (not in Z*_{n^2}): forged or damaged");
  }
  return absl::OkStatus();
}

absl::StatusOr<Ciphertext> Ciphertext::FromBignum(const PaillierPublicKey& key, BnPtr value) {
  BnCtxPtr ctx = NewBnCtx();
  RETURN_IF_ERROR(ValidateCiphertext(key, value.get(), ctx.get()));
  return Ciphertext(std::move(value));
}

absl::StatusOr<Ciphertext> Encrypt(const PaillierPublicKey& key, const BIGNUM* m, BN_CTX* ctx) {
  ASSIGN_OR_RETURN(BnPtr gm, MessageTerm(key, m, ctx));
  ASSIGN_OR_RETURN(BnPtr r, RandomUnit(key.n(), key.n(), ctx));
  BnPtr c = NewBn();
  if (BN_mod_exp_mont(c.get(), r.get(), key.n(), key.n_squared(), ctx,
                      key.state().mont_n_squared.get()) != 1 ||
      BN_mod_mul(c.get(), c.get(), gm.get(), key.n_squared(), ctx) != 1) {
    return OpenSslError("encrypt");
  }
  return CiphertextAccess::Make(std::move(c));
}

Ciphertext Add(const PaillierPublicKey& key, const Ciphertext& a, const Ciphertext& b,
               BN_CTX* ctx) {
  BnPtr c = NewBn();
  // Both operands are below n^2, so this only fails on allocation failure.
  if (BN_mod_mul(c.get(), a.value(), b.value(), key.n_squared(), ctx) != 1) std::abort();
  return CiphertextAccess::Make(std::move(c));
}

CiphertextSum::CiphertextSum(const PaillierPublicKey& key)
    : key_(key), ctx_(NewBnCtx()), acc_(NewBn()) {
  BN_one(acc_.get());
}

void CiphertextSum::Add(const Ciphertext& c) {
  if (BN_mod_mul_montgomery(acc_.get(), acc_.get(), c.value(), key_.state().mont_n_squared.get(),
                            ctx_.get()) != 1) {
    std::abort();  // allocation failure only
  }
  ++terms_;
}

Ciphertext CiphertextSum::Finish(const Ciphertext& extra) {
  // acc = (product) R^-k mod n^2; multiply by R^k = (R mod n^2)^k.
  BN_MONT_CTX* mont = key_.state().mont_n_squared.get();
  BnPtr r_mod = NewBn();
  BnPtr r_k = NewBn();
  BnPtr k = NewBn();
  BnPtr out = NewBn();
  if (BN_to_montgomery(r_mod.get(), BN_value_one(), mont, ctx_.get()) != 1 ||
      BN_set_word(k.get(), static_cast<BN_ULONG>(terms_)) != 1 ||
      BN_mod_exp_mont(r_k.get(), r_mod.get(), k.get(), key_.n_squared(), ctx_.get(), mont) != 1 ||
      BN_mod_mul(out.get(), acc_.get(), r_k.get(), key_.n_squared(), ctx_.get()) != 1 ||
      BN_mod_mul(out.get(), out.get(), extra.value(), key_.n_squared(), ctx_.get()) != 1) {
    std::abort();  // allocation failure only
  }
  return CiphertextAccess::Make(std::move(out));
}

absl::StatusOr<PaillierPrivateKey> PaillierPrivateKey::Generate(int modulus_bits) {
  if (modulus_bits < kMinModulusBits || modulus_bits % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Paillier key of ", modulus_bits, " bits; an even size >= ", kMinModulusBits, " required"));
  }
  BnCtxPtr ctx = NewBnCtx();
  BnPtr p = NewBn(), q = NewBn(), n = NewBn();
  for (;;) {
    if (BN_generate_prime_ex2(p.get(), modulus_bits / 2, 0, nullptr, nullptr, nullptr, ctx.get()) !=
            1 ||
        BN_generate_prime_ex2(q.get(), modulus_bits / 2, 0, nullptr, nullptr, nullptr, ctx.get()) !=
            1 ||
        BN_mul(n.get(), p.get(), q.get(), ctx.get()) != 1) {
      return OpenSslError("generate Paillier primes");
    }
    if (BN_cmp(p.get(), q.get()) != 0 && BN_num_bits(n.get()) == modulus_bits) break;
  }
  return FromPrimes(p.get(), q.get());
}

std::string PaillierPrivateKey::Serialize() const {
  const size_t half = public_key_.modulus_bytes() / 2;
  std::string bytes(2 * half, '\0');
  BN_bn2binpad(state_->p.get(), reinterpret_cast<unsigned char*>(bytes.data()),
               static_cast<int>(half));
  BN_bn2binpad(state_->q.get(), reinterpret_cast<unsigned char*>(bytes.data() + half),
               static_cast<int>(half));
  return bytes;
}

absl::StatusOr<PaillierPrivateKey> PaillierPrivateKey::Deserialize(absl::string_view bytes) {
  if (bytes.empty() || bytes.size() % 2 != 0) {
    return absl::InvalidArgumentError("a Paillier private key is two primes of one length");
  }
  const size_t half = bytes.size() / 2;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  BnPtr p(BN_bin2bn(data, static_cast<int>(half), nullptr));
  BnPtr q(BN_bin2bn(data + half, static_cast<int>(half), nullptr));
  if (p == nullptr || q == nullptr) return OpenSslError("read the Paillier primes");
  return FromPrimes(p.get(), q.get());
}

absl::StatusOr<PaillierPrivateKey> PaillierPrivateKey::FromPrimes(const BIGNUM* p,
                                                                  const BIGNUM* q) {
  BnCtxPtr ctx_holder = NewBnCtx();
  BN_CTX* ctx = ctx_holder.get();
  if (p == nullptr || q == nullptr || BN_num_bits(p) != BN_num_bits(q) || BN_cmp(p, q) == 0) {
    return absl::InvalidArgumentError("Paillier primes must be two distinct primes of one size");
  }
  for (const BIGNUM* prime : {p, q}) {
    if (BN_check_prime(prime, ctx, nullptr) != 1) {
      return absl::InvalidArgumentError("Paillier key: a factor is not prime");
    }
  }
  auto s = std::make_shared<State>();
  s->p = Dup(p);
  s->q = Dup(q);
  BnPtr n = NewBn(), phi = NewBn(), g = NewBn();
  s->p_minus_1 = Dup(p);
  s->q_minus_1 = Dup(q);
  // gcd(n, (p-1)(q-1)) = 1 makes g = n + 1 a valid generator (always so for equal sizes).
  if (BN_mul(n.get(), p, q, ctx) != 1 || BN_sub_word(s->p_minus_1.get(), 1) != 1 ||
      BN_sub_word(s->q_minus_1.get(), 1) != 1 ||
      BN_mul(phi.get(), s->p_minus_1.get(), s->q_minus_1.get(), ctx) != 1 ||
      BN_gcd(g.get(), n.get(), phi.get(), ctx) != 1) {
    return OpenSslError("check the Paillier primes");
  }
  if (!BN_is_one(g.get())) return absl::InvalidArgumentError("Paillier key: gcd(n, phi) != 1");
  ASSIGN_OR_RETURN(PaillierPublicKey public_key, PaillierPublicKey::FromModulus(n.get()));

  s->p_squared = NewBn();
  s->q_squared = NewBn();
  s->q_squared_inv_mod_p2 = NewBn();
  s->q_inv_mod_p = NewBn();
  if (BN_sqr(s->p_squared.get(), s->p.get(), ctx) != 1 ||
      BN_sqr(s->q_squared.get(), s->q.get(), ctx) != 1 ||
      BN_mod_inverse(s->q_squared_inv_mod_p2.get(), s->q_squared.get(), s->p_squared.get(), ctx) ==
          nullptr ||
      BN_mod_inverse(s->q_inv_mod_p.get(), s->q.get(), s->p.get(), ctx) == nullptr) {
    return OpenSslError("derive the CRT constants");
  }
  s->mont_p_squared = NewMont(s->p_squared.get(), ctx);
  s->mont_q_squared = NewMont(s->q_squared.get(), ctx);
  if (s->mont_p_squared == nullptr || s->mont_q_squared == nullptr) {
    return OpenSslError("set up Montgomery arithmetic");
  }
  // h_p = L_p((n+1)^(p-1) mod p^2)^-1 mod p, likewise h_q.
  BnPtr gen = Dup(n.get());
  BN_add_word(gen.get(), 1);
  for (const auto& [prime, prime_sq, minus_1, mont, h] :
       {std::tuple(s->p.get(), s->p_squared.get(), s->p_minus_1.get(), s->mont_p_squared.get(),
                   &s->h_p),
        std::tuple(s->q.get(), s->q_squared.get(), s->q_minus_1.get(), s->mont_q_squared.get(),
                   &s->h_q)}) {
    BnPtr x = NewBn();
    RETURN_IF_ERROR(ModExpSecret(x.get(), gen.get(), minus_1, prime_sq, mont, ctx));
    ASSIGN_OR_RETURN(BnPtr l, L(x.get(), prime, ctx));
    *h = NewBn();
    if (BN_mod_inverse(h->get(), l.get(), prime, ctx) == nullptr) {
      return OpenSslError("invert L(g^(p-1))");
    }
  }
  for (BIGNUM* secret : {s->p.get(), s->q.get(), s->p_squared.get(), s->q_squared.get(),
                         s->p_minus_1.get(), s->q_minus_1.get()}) {
    BN_set_flags(secret, BN_FLG_CONSTTIME);
  }
  return PaillierPrivateKey(std::move(public_key), std::move(s));
}

absl::StatusOr<Ciphertext> PaillierPrivateKey::EncryptCrt(const BIGNUM* m, BN_CTX* ctx) const {
  const State& s = *state_;
  ASSIGN_OR_RETURN(BnPtr gm, MessageTerm(public_key_, m, ctx));
  // r^n mod n^2 for uniform r is uniform on the n-th residues, which are (by CRT) pairs of
  // uniform elements of the order-(p-1) subgroup mod p^2 and the order-(q-1) one mod q^2.
  // u^p for u uniform in Z*_{p^2} is uniform on that subgroup too (p kills the order-p part
  // and is coprime to p-1), so x_p = u^p mod p^2 and x_q = v^q mod q^2 give the same
  // distribution with 1024-bit exponents mod 2048-bit moduli instead of a 2048-bit one mod n^2.
  BnPtr x_p = NewBn(), x_q = NewBn(), c = NewBn();
  ASSIGN_OR_RETURN(BnPtr u, RandomUnit(s.p_squared.get(), s.p.get(), ctx));
  ASSIGN_OR_RETURN(BnPtr v, RandomUnit(s.q_squared.get(), s.q.get(), ctx));
  RETURN_IF_ERROR(
      ModExpSecret(x_p.get(), u.get(), s.p.get(), s.p_squared.get(), s.mont_p_squared.get(), ctx));
  RETURN_IF_ERROR(
      ModExpSecret(x_q.get(), v.get(), s.q.get(), s.q_squared.get(), s.mont_q_squared.get(), ctx));
  // r^n mod n^2 = x_q + q^2 ((x_p - x_q) (q^2)^-1 mod p^2).
  if (BN_mod_sub(c.get(), x_p.get(), x_q.get(), s.p_squared.get(), ctx) != 1 ||
      BN_mod_mul(c.get(), c.get(), s.q_squared_inv_mod_p2.get(), s.p_squared.get(), ctx) != 1 ||
      BN_mul(c.get(), c.get(), s.q_squared.get(), ctx) != 1 ||
      BN_add(c.get(), c.get(), x_q.get()) != 1 ||
      BN_mod_mul(c.get(), c.get(), gm.get(), public_key_.n_squared(), ctx) != 1) {
    return OpenSslError("combine the CRT encryption");
  }
  return CiphertextAccess::Make(std::move(c));
}

absl::StatusOr<BnPtr> PaillierPrivateKey::Decrypt(const Ciphertext& c, BN_CTX* ctx) const {
  const State& s = *state_;
  BnPtr m_p, m_q;
  for (const auto& [prime, prime_sq, minus_1, mont, h, out] :
       {std::tuple(s.p.get(), s.p_squared.get(), s.p_minus_1.get(), s.mont_p_squared.get(),
                   s.h_p.get(), &m_p),
        std::tuple(s.q.get(), s.q_squared.get(), s.q_minus_1.get(), s.mont_q_squared.get(),
                   s.h_q.get(), &m_q)}) {
    BnPtr reduced = NewBn(), x = NewBn();
    if (BN_nnmod(reduced.get(), c.value(), prime_sq, ctx) != 1) return OpenSslError("reduce c");
    RETURN_IF_ERROR(ModExpSecret(x.get(), reduced.get(), minus_1, prime_sq, mont, ctx));
    ASSIGN_OR_RETURN(BnPtr l, L(x.get(), prime, ctx));
    *out = NewBn();
    if (BN_mod_mul(out->get(), l.get(), h, prime, ctx) != 1) return OpenSslError("decrypt");
  }
  // m = m_q + q ((m_p - m_q) q^-1 mod p).
  BnPtr m = NewBn();
  if (BN_mod_sub(m.get(), m_p.get(), m_q.get(), s.p.get(), ctx) != 1 ||
      BN_mod_mul(m.get(), m.get(), s.q_inv_mod_p.get(), s.p.get(), ctx) != 1 ||
      BN_mul(m.get(), m.get(), s.q.get(), ctx) != 1 || BN_add(m.get(), m.get(), m_q.get()) != 1) {
    return OpenSslError("combine the CRT decryption");
  }
  return m;
}

std::string SerializeCiphertexts(const PaillierPublicKey& key,
                                 const std::vector<Ciphertext>& ciphertexts) {
  const size_t block = key.ciphertext_bytes();
  std::string out(block * ciphertexts.size(), '\0');
  for (size_t i = 0; i < ciphertexts.size(); ++i) {
    BN_bn2binpad(ciphertexts[i].value(), reinterpret_cast<unsigned char*>(&out[i * block]),
                 static_cast<int>(block));
  }
  return out;
}

absl::StatusOr<Ciphertext> DeserializeCiphertext(const PaillierPublicKey& key,
                                                 absl::string_view bytes) {
  if (bytes.size() != key.ciphertext_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat("Paillier ciphertext of ", bytes.size(),
                                                   " bytes, expected ", key.ciphertext_bytes()));
  }
  BnPtr c(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()),
                    static_cast<int>(bytes.size()), nullptr));
  if (c == nullptr) return OpenSslError("read a ciphertext");
  return Ciphertext::FromBignum(key, std::move(c));
}

absl::StatusOr<std::vector<Ciphertext>> DeserializeCiphertexts(const PaillierPublicKey& key,
                                                               absl::string_view bytes,
                                                               size_t expected_count) {
  const size_t block = key.ciphertext_bytes();
  if (bytes.size() != block * expected_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("ciphertext list of ", bytes.size(), " bytes, expected ", expected_count,
                     " ciphertexts of ", block, " bytes (", block * expected_count, ")"));
  }
  std::vector<Ciphertext> out;
  out.reserve(expected_count);
  for (size_t i = 0; i < expected_count; ++i) {
    auto c = DeserializeCiphertext(key, bytes.substr(i * block, block));
    if (!c.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("ciphertext ", i, ": ", c.status().message()));
    }
    out.push_back(*std::move(c));
  }
  return out;
}

}  // namespace vfsynth::secure
