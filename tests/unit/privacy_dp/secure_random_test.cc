// The cryptographic stream every DP release draws from: ChaCha20's published keystream,
// full-entropy key derivation, and the distributions built on it.
#include "common/random/secure_random.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace vfsynth {
namespace {

std::vector<unsigned char> Bytes(SecureRandom& stream, size_t n) {
  std::vector<unsigned char> out(n);
  stream.Fill(out.data(), n);
  return out;
}

TEST(SecureRandomTest, IsTheChaCha20KeystreamOfRfc8439) {
  // RFC 8439, appendix A.1, test vector #1: key 0, nonce 0, block counter 0.
  const std::vector<unsigned char> expected = {
      0x76, 0xb8, 0xe0, 0xad, 0xa0, 0xf1, 0x3d, 0x90, 0x40, 0x5d, 0x6a, 0xe5, 0x53,
      0x86, 0xbd, 0x28, 0xbd, 0xd2, 0x19, 0xb8, 0xa0, 0x8d, 0xed, 0x1a, 0xa8, 0x36,
      0xef, 0xcc, 0x8b, 0x77, 0x0d, 0xc7, 0xda, 0x41, 0x59, 0x7c, 0x51, 0x57, 0x48,
      0x8d, 0x77, 0x24, 0xe0, 0x3f, 0xb8, 0xd8, 0x4a, 0x37, 0x6a, 0x43, 0xb8, 0xf4,
      0x15, 0x18, 0xa1, 0x1c, 0xc3, 0x87, 0xb6, 0x69, 0xb2, 0xee, 0x65, 0x86};
  SecureRandom stream = SecureRandom::FromKey(SecureRandom::Key{});
  EXPECT_EQ(Bytes(stream, expected.size()), expected);
}

TEST(SecureRandomTest, DerivedStreamsAreKeyedByTheWholeHmac) {
  const std::string secret = "a-sampling-secret-of-the-parties";
  std::string message = "real-batch";
  message.push_back('\0');
  for (int i = 0; i < 8; ++i) message.push_back(static_cast<char>(i == 0 ? 7 : 0));  // counter 7
  SecureRandom::Key key;
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), key.data(), &length);
  ASSERT_EQ(length, key.size());
  SecureRandom derived = SecureRandom::Derived(secret, "real-batch", 7);
  SecureRandom direct = SecureRandom::FromKey(key);
  EXPECT_EQ(Bytes(derived, 256), Bytes(direct, 256));
  // A key differing in one bit of the last HMAC byte gives an unrelated stream: every
  // bit of the 256 is used (a 32-bit seed would ignore this one).
  key[31] ^= 1;
  SecureRandom flipped = SecureRandom::FromKey(key);
  SecureRandom again = SecureRandom::Derived(secret, "real-batch", 7);
  EXPECT_NE(Bytes(flipped, 64), Bytes(again, 64));
}

TEST(SecureRandomTest, DerivedStreamsRepeatAndSeparatePurposesAndCounters) {
  SecureRandom a = SecureRandom::Derived("secret", "purpose", 1);
  SecureRandom b = SecureRandom::Derived("secret", "purpose", 1);
  SecureRandom c = SecureRandom::Derived("secret", "purpose", 2);
  SecureRandom d = SecureRandom::Derived("secret", "other", 1);
  SecureRandom e = SecureRandom::Derived("secret2", "purpose", 1);
  const std::vector<unsigned char> first = Bytes(a, 64);
  EXPECT_EQ(first, Bytes(b, 64));
  EXPECT_NE(first, Bytes(c, 64));
  EXPECT_NE(first, Bytes(d, 64));
  EXPECT_NE(first, Bytes(e, 64));
}

TEST(SecureRandomTest, OsKeyedStreamsDiffer) {
  absl::StatusOr<SecureRandom> a = SecureRandom::FromOsEntropy();
  absl::StatusOr<SecureRandom> b = SecureRandom::FromOsEntropy();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(Bytes(*a, 32), Bytes(*b, 32));
}

TEST(SecureRandomTest, ReadsAcrossBufferBoundariesContinueTheKeystream) {
  SecureRandom whole = SecureRandom::FromKey(SecureRandom::Key{});
  SecureRandom pieces = SecureRandom::FromKey(SecureRandom::Key{});
  // Pieces that end a buffer, span whole buffers (written straight through) and split them.
  const std::vector<unsigned char> all = Bytes(whole, 18200);
  std::vector<unsigned char> joined;
  for (size_t n : {1u, 4095u, 8200u, 3u, 5000u, 901u}) {
    const std::vector<unsigned char> part = Bytes(pieces, n);
    joined.insert(joined.end(), part.begin(), part.end());
  }
  EXPECT_EQ(joined, all);
}

TEST(SecureRandomTest, UniformsAreInTheOpenIntervalAndUnbiased) {
  SecureRandom stream = SecureRandom::Derived("k", "uniform", 0);
  constexpr int kDraws = 200000;
  double sum = 0;
  std::vector<int> cells(7, 0);
  for (int i = 0; i < kDraws; ++i) {
    const double u = stream.Uniform();
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    ++cells[stream.UniformBelow(7)];
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 4 * std::sqrt(1.0 / 12 / kDraws));
  // Chi-square with 6 degrees of freedom: 22.46 is its 0.999 quantile.
  double chi2 = 0;
  for (int n : cells) chi2 += (n - kDraws / 7.0) * (n - kDraws / 7.0) / (kDraws / 7.0);
  EXPECT_LT(chi2, 22.46);
  EXPECT_EQ(stream.UniformBelow(1), 0u);
}

TEST(SecureRandomTest, GaussiansHaveUnitMomentsAndDoublePrecisionTails) {
  SecureRandom stream = SecureRandom::Derived("k", "gaussian", 0);
  constexpr int kDraws = 400000;
  double m1 = 0, m2 = 0, m4 = 0;
  int beyond_two = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double x = stream.Gaussian();
    m1 += x;
    m2 += x * x;
    m4 += x * x * x * x;
    beyond_two += std::abs(x) > 2 ? 1 : 0;
  }
  EXPECT_NEAR(m1 / kDraws, 0.0, 0.01);
  EXPECT_NEAR(m2 / kDraws, 1.0, 0.01);
  EXPECT_NEAR(m4 / kDraws, 3.0, 0.06);
  EXPECT_NEAR(static_cast<double>(beyond_two) / kDraws, 0.0455, 0.002);
  // The smallest uniform the stream can give maps beyond 8.5 sigma; float32 Box-Muller
  // stops at 5.77.
  const double smallest = 0.5 * 0x1.0p-53;
  EXPECT_GT(BoxMuller(smallest, 0.0)[0], 8.5);
  EXPECT_NEAR(BoxMuller(std::exp(-2.0), 0.0)[0], 2.0, 1e-12);
  EXPECT_NEAR(BoxMuller(std::exp(-2.0), 0.25)[1], 2.0, 1e-12);
}

}  // namespace
}  // namespace vfsynth
