#include "common/secure/paillier.h"

#include <openssl/bn.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/secure/test_keys.h"

namespace vfsynth::secure {
namespace {

using ::testing::HasSubstr;
using testing::OtherTestKey;
using testing::TestKey;

BnPtr Word(BN_ULONG w) {
  BnPtr b = NewBn();
  BN_set_word(b.get(), w);
  return b;
}

uint64_t DecryptWord(const PaillierPrivateKey& key, const Ciphertext& c) {
  BnCtxPtr ctx = NewBnCtx();
  auto m = key.Decrypt(c, ctx.get());
  EXPECT_TRUE(m.ok()) << m.status();
  return BN_get_word(m->get());
}

TEST(PaillierTest, AddingCiphertextsAddsPlaintexts) {
  const PaillierPublicKey& pk = TestKey().public_key();
  BnCtxPtr ctx = NewBnCtx();
  auto a = Encrypt(pk, Word(1234567).get(), ctx.get());
  auto b = Encrypt(pk, Word(7654321).get(), ctx.get());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(DecryptWord(TestKey(), Add(pk, *a, *b, ctx.get())), 1234567u + 7654321u);

  CiphertextSum sum(pk);
  for (int i = 0; i < 5; ++i) sum.Add(*a);
  EXPECT_EQ(DecryptWord(TestKey(), sum.Finish(*b)), 5u * 1234567u + 7654321u);
}

TEST(PaillierTest, CrtEncryptionDecryptsLikePlainEncryption) {
  const PaillierPrivateKey& key = TestKey();
  BnCtxPtr ctx = NewBnCtx();
  // A plaintext near n: all 2047 bits matter.
  BnPtr big = NewBn();
  BN_sub(big.get(), key.public_key().n(), BN_value_one());
  const BnPtr zero = Word(0), small = Word(99);
  for (const BIGNUM* m : {zero.get(), small.get(), big.get()}) {
    auto crt = key.EncryptCrt(m, ctx.get());
    auto plain = Encrypt(key.public_key(), m, ctx.get());
    ASSERT_TRUE(crt.ok()) << crt.status();
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_NE(BN_cmp(crt->value(), plain->value()), 0);  // fresh randomness each
    auto from_crt = key.Decrypt(*crt, ctx.get());
    auto from_plain = key.Decrypt(*plain, ctx.get());
    ASSERT_TRUE(from_crt.ok() && from_plain.ok());
    EXPECT_EQ(BN_cmp(from_crt->get(), m), 0);
    EXPECT_EQ(BN_cmp(from_plain->get(), m), 0);
  }
}

TEST(PaillierTest, PlaintextOutsideZnIsRefused) {
  BnCtxPtr ctx = NewBnCtx();
  auto c = TestKey().EncryptCrt(TestKey().public_key().n(), ctx.get());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PaillierTest, ForgedCiphertextsAreRefused) {
  const PaillierPublicKey& pk = TestKey().public_key();
  const size_t block = pk.ciphertext_bytes();
  ASSERT_EQ(block, 512u);
  auto bytes_of = [&](const BIGNUM* b) {
    std::string out(block, '\0');
    BN_bn2binpad(b, reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(block));
    return out;
  };
  BnCtxPtr ctx = NewBnCtx();
  // 0, n^2 itself, and a multiple of n's factor p (5 p, below n^2, not a unit).
  EXPECT_THAT(DeserializeCiphertext(pk, std::string(block, '\0')).status().message(),
              HasSubstr("zero"));
  EXPECT_THAT(DeserializeCiphertext(pk, bytes_of(pk.n_squared())).status().message(),
              HasSubstr("not below n^2"));
  BnPtr p(BN_dup(pk.n()));
  BIGNUM* factor = nullptr;
  BN_hex2bn(&factor,
            "D580427BCE2CC152099462C84991B0799EA8C4D35AEDE82AFE1B7130B1B6E416D682FB99A7B5FC3F6BD1"
            "C6858CBB22827E0F874F5735AAC8F2D92E7C93EFB3DC9CB225760F2601675289DAD0823153E913172AB2"
            "39A70CA4125C8C6B42C793A8B6E8255ED4772B2D44928AF9D34E572BFE8FAEDA88D3CB2E449DA3927CD8"
            "DBCB");
  BN_mul_word(factor, 5);
  EXPECT_THAT(DeserializeCiphertext(pk, bytes_of(factor)).status().message(),
              HasSubstr("shares a factor with n"));
  BN_free(factor);
  // Wrong lengths, of one ciphertext and of a list.
  auto good = Encrypt(pk, Word(3).get(), ctx.get());
  ASSERT_TRUE(good.ok());
  const std::string one = SerializeCiphertexts(pk, {*good});
  EXPECT_THAT(DeserializeCiphertext(pk, one.substr(1)).status().message(),
              HasSubstr("511 bytes, expected 512"));
  EXPECT_FALSE(DeserializeCiphertexts(pk, one + one, 3).ok());
  EXPECT_FALSE(DeserializeCiphertexts(pk, one + one.substr(7), 2).ok());
  auto two = DeserializeCiphertexts(pk, one + one, 2);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(DecryptWord(TestKey(), (*two)[1]), 3u);
}

TEST(PaillierTest, PrivateKeyRoundTripsAndDecryptsWhatTheOriginalEncrypted) {
  const std::string saved = TestKey().Serialize();
  EXPECT_EQ(saved.size(), TestKey().public_key().modulus_bytes());
  auto restored = PaillierPrivateKey::Deserialize(saved);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->public_key().Serialize(), TestKey().public_key().Serialize());
  BnCtxPtr ctx = NewBnCtx();
  BnPtr m = NewBn();
  ASSERT_EQ(BN_set_word(m.get(), 123456789), 1);
  auto c = TestKey().EncryptCrt(m.get(), ctx.get());
  ASSERT_TRUE(c.ok()) << c.status();
  auto decrypted = restored->Decrypt(*c, ctx.get());
  ASSERT_TRUE(decrypted.ok()) << decrypted.status();
  EXPECT_EQ(BN_get_word(decrypted->get()), 123456789u);
  std::string flipped = saved;
  flipped[flipped.size() / 2 - 1] ^= 1;  // p becomes even
  EXPECT_FALSE(PaillierPrivateKey::Deserialize(flipped).ok());
  EXPECT_THAT(PaillierPrivateKey::Deserialize("abc").status().message(),
              HasSubstr("two primes of one length"));
}

TEST(PaillierTest, PublicKeyRoundTripsAndSmallOrEvenModuliAreRefused) {
  const PaillierPublicKey& pk = TestKey().public_key();
  const std::string bytes = pk.Serialize();
  ASSERT_EQ(bytes.size(), 256u);
  auto back = PaillierPublicKey::Deserialize(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(BN_cmp(back->n(), pk.n()), 0);

  // A 1024-bit modulus (two 512-bit primes).
  BnCtxPtr ctx = NewBnCtx();
  BnPtr p = NewBn(), q = NewBn(), n = NewBn();
  BN_generate_prime_ex2(p.get(), 512, 0, nullptr, nullptr, nullptr, ctx.get());
  BN_generate_prime_ex2(q.get(), 512, 0, nullptr, nullptr, nullptr, ctx.get());
  BN_mul(n.get(), p.get(), q.get(), ctx.get());
  std::string small(128, '\0');
  BN_bn2binpad(n.get(), reinterpret_cast<unsigned char*>(small.data()), 128);
  EXPECT_THAT(PaillierPublicKey::Deserialize(small).status().message(),
              HasSubstr("1024 bits, at least 2048"));

  std::string even = bytes;
  even.back() = static_cast<char>(even.back() & ~1);
  EXPECT_THAT(PaillierPublicKey::Deserialize(even).status().message(), HasSubstr("even"));
  EXPECT_FALSE(PaillierPrivateKey::Generate(1024).ok());
}

}  // namespace
}  // namespace vfsynth::secure
