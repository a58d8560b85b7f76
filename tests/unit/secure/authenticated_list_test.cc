#include "common/secure/authenticated_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <openssl/hmac.h>

#include <string>

#include "absl/strings/escaping.h"

namespace vfsynth::secure {
namespace {

using ::testing::HasSubstr;

const std::string kKey = "the parties' shared list key, 32b";

ListHeader Header() { return {"run-7", "hospital", "insurer", "cross-counts/age", 3}; }

absl::StatusOr<std::string> SealedList() {
  return Seal(kKey, Header(), std::string("ciphertexts\0and more", 20));
}

TEST(AuthenticatedListTest, OpensWhatWasSealed) {
  auto sealed = SealedList();
  ASSERT_TRUE(sealed.ok()) << sealed.status();
  auto payload = Open(kKey, Header(), *sealed);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(*payload, std::string("ciphertexts\0and more", 20));
  auto empty = Seal(kKey, Header(), "");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*Open(kKey, Header(), *empty), "");
}

TEST(AuthenticatedListTest, AFlippedByteOrAnotherKeyFailsTheMac) {
  std::string sealed = *SealedList();
  for (size_t at : {size_t{24}, sealed.size() - 40, sealed.size() - 1}) {
    std::string altered = sealed;
    altered[at] ^= 0x01;
    const absl::Status s = Open(kKey, Header(), altered).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << at;
    EXPECT_THAT(s.message(), HasSubstr("MAC")) << at;
  }
  EXPECT_THAT(Open("another key of the same length!!!", Header(), sealed).status().message(),
              HasSubstr("MAC does not verify"));
  EXPECT_FALSE(Open(kKey, Header(), sealed.substr(0, sealed.size() - 1)).ok());
  EXPECT_FALSE(Open(kKey, Header(), "").ok());
  EXPECT_FALSE(Seal("short", Header(), "x").ok());
}

TEST(AuthenticatedListTest, AListDeliveredInAnotherPlaceIsRefused) {
  const std::string sealed = *SealedList();
  ListHeader other_run = Header();
  other_run.run_id = "run-8";
  EXPECT_THAT(Open(kKey, other_run, sealed).status().message(), HasSubstr("run id 'run-7'"));

  ListHeader swapped = Header();
  std::swap(swapped.sender, swapped.receiver);
  EXPECT_THAT(Open(kKey, swapped, sealed).status().message(), HasSubstr("sender 'hospital'"));

  ListHeader other_purpose = Header();
  other_purpose.purpose = "cross-counts/sex";
  EXPECT_THAT(Open(kKey, other_purpose, sealed).status().message(), HasSubstr("purpose"));

  ListHeader replay = Header();
  replay.index = 4;  // the list of step 3 offered again at step 4
  const absl::Status s = Open(kKey, replay, sealed).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("index '3', expected '4'"));
}

TEST(AuthenticatedListTest, AHeaderRewrittenByTheRelayFailsTheMac) {
  // The curator re-labels a list for another index: the header is under the MAC.
  ListHeader relabelled = Header();
  relabelled.index = 4;
  const std::string sealed = *SealedList();
  std::string forged = sealed;
  // The index is the 8 bytes before the payload length; rewrite its last byte 3 -> 4.
  const size_t index_last = sealed.size() - 32 - 20 - 8 - 1;
  ASSERT_EQ(forged[index_last], 3);
  forged[index_last] = 4;
  EXPECT_THAT(Open(kKey, relabelled, forged).status().message(), HasSubstr("MAC"));
}

// HMAC-SHA256(key, data) as raw bytes and as hex: the PSI's token of a record id `data`.
std::string Hmac(const std::string& key, const std::string& data) {
  unsigned char digest[32];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &length);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

TEST(DeriveListKeyTest, IsHkdfSha256UnderItsOwnInfoAndNeverAnIdsToken) {
  const std::string shared = "the parties shared alignment key";
  auto key = DeriveListKey(shared, "marginals/lists");
  ASSERT_TRUE(key.ok()) << key.status();
  // HKDF-SHA256(salt "vfsynth-list-key-salt-v1", info "vfsynth\0list-key\0marginals/lists"),
  // computed independently (Python hmac).
  EXPECT_EQ(absl::BytesToHexString(*key),
            "1ac23c8b1b4c4187189ee1ced78d31423ea7537bd34106dff35ae486c413885c");
  // Not what the PSI would make of the purpose (or of the old label) as a record id.
  for (const std::string id : {"marginals/lists", "vfsynth/marginals/list-key"}) {
    EXPECT_NE(*key, Hmac(shared, id));
    EXPECT_NE(*key, absl::BytesToHexString(Hmac(shared, id)));
  }
  auto other = DeriveListKey(shared, "marginals/other");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*key, *other);
  EXPECT_EQ(*DeriveListKey(shared, "marginals/lists"), *key);
  EXPECT_NE(*DeriveListKey("another shared alignment key....", "marginals/lists"), *key);
  EXPECT_FALSE(DeriveListKey("short", "marginals/lists").ok());
}

// Parties compare check values through the curator: equal exactly for the same secret,
// run and label, and neither a list key nor a PSI token of the secret.
TEST(KeyCheckValueTest, IsHkdfSha256PerRunAndLabelAndNeverAListKeyOrToken) {
  const std::string secret = "the parties shared sampling secret";
  auto check = KeyCheckValue(secret, "sampling_secret", "run-7");
  ASSERT_TRUE(check.ok()) << check.status();
  // HKDF-SHA256(salt "vfsynth-key-check-salt-v1",
  // info "vfsynth\0key-check\0sampling_secret\0run-7"), computed independently (Python hmac).
  EXPECT_EQ(absl::BytesToHexString(*check),
            "15f723cfedf1e28797552d9b4371a0047012ee24edfe5bd11487fe5268ba306e");
  EXPECT_EQ(*KeyCheckValue(secret, "sampling_secret", "run-7"), *check);
  EXPECT_NE(*KeyCheckValue(secret, "sampling_secret", "run-8"), *check);
  EXPECT_NE(*KeyCheckValue(secret, "alignment_key", "run-7"), *check);
  EXPECT_NE(*KeyCheckValue("another shared sampling secret..", "sampling_secret", "run-7"), *check);
  EXPECT_NE(*DeriveListKey(secret, "sampling_secret"), *check);
  EXPECT_NE(Hmac(secret, "sampling_secret"), *check);
  EXPECT_FALSE(KeyCheckValue("short", "sampling_secret", "run-7").ok());
}

}  // namespace
}  // namespace vfsynth::secure
