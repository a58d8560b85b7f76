#include "common/secure/signed_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/secure/authenticated_list.h"
#include "tests/unit/secure/test_certs.h"

namespace vfsynth::secure {
namespace {

using ::testing::HasSubstr;

// Two CAs from deploy/gen-certs.sh, each with parties hospital, insurer and bank.
class SignedListTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/signed_list_test_", ::getpid()));
    for (const char* ca : {"run", "other"}) {
      ASSERT_TRUE(
          testing::GenerateTestCerts(absl::StrCat(*dir_, "/", ca), "hospital insurer bank"));
    }
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete dir_;
  }

 protected:
  static std::string Read(const std::string& ca, const std::string& file) {
    return testing::ReadTestFile(*dir_ + "/" + ca + "/" + file);
  }
  static ListSigner Signer(const std::string& ca, const std::string& party) {
    auto signer = ListSigner::FromPem(Read(ca, party + ".key"), Read(ca, party + ".crt"));
    EXPECT_TRUE(signer.ok()) << signer.status();
    return *signer;
  }
  static ListVerifier Verifier() {
    auto verifier = ListVerifier::FromCaPem(Read("run", "ca.crt"));
    EXPECT_TRUE(verifier.ok()) << verifier.status();
    return *verifier;
  }
  static ListHeader Header() {
    return {"run-7", "hospital", "insurer", "marginals/records@plan+alignment", 0};
  }
  static constexpr char kHospital[] = "spiffe://vfsynth/party/hospital";

  static std::string* dir_;
};

std::string* SignedListTest::dir_ = nullptr;

TEST_F(SignedListTest, VerifiesTheSendersOwnSignatureAndReturnsThePayload) {
  auto signed_payload = Signer("run", "hospital").Sign(Header(), "ciphertexts");
  ASSERT_TRUE(signed_payload.ok()) << signed_payload.status();
  auto payload = Verifier().Verify(Header(), kHospital, *signed_payload);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(*payload, "ciphertexts");
}

TEST_F(SignedListTest, AListSignedByAnotherPartysKeyIsRefused) {
  // Bank signs a list "from hospital": bank's own valid certificate names bank.
  auto forged = Signer("run", "bank").Sign(Header(), "ciphertexts");
  ASSERT_TRUE(forged.ok());
  EXPECT_THAT(Verifier().Verify(Header(), kHospital, *forged).status().message(),
              HasSubstr("names 'spiffe://vfsynth/party/bank'"));
  // Bank's signature with hospital's certificate swapped in does not verify.
  auto genuine = Signer("run", "hospital").Sign(Header(), "ciphertexts");
  ASSERT_TRUE(genuine.ok());
  const size_t cert_end = std::string("vfsynth-signed-list-v1").size();
  std::string spliced = forged->substr(0, cert_end);
  const std::string& g = *genuine;
  const std::string& f = *forged;
  auto length_at = [](const std::string& s, size_t at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
    return v;
  };
  const size_t g_cert = 8 + length_at(g, cert_end);
  const size_t f_cert = 8 + length_at(f, cert_end);
  spliced.append(g.substr(cert_end, g_cert));   // hospital's certificate
  spliced.append(f.substr(cert_end + f_cert));  // bank's signature and the payload
  const absl::Status s = Verifier().Verify(Header(), kHospital, spliced).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("does not verify"));
}

TEST_F(SignedListTest, ACertificateFromAnotherCaIsRefused) {
  auto signed_payload = Signer("other", "hospital").Sign(Header(), "ciphertexts");
  ASSERT_TRUE(signed_payload.ok());
  EXPECT_THAT(Verifier().Verify(Header(), kHospital, *signed_payload).status().message(),
              HasSubstr("does not chain to the run's CA"));
}

TEST_F(SignedListTest, AnAlteredPayloadOrHeaderOrAnUnsignedListIsRefused) {
  auto signed_payload = Signer("run", "hospital").Sign(Header(), "ciphertexts");
  ASSERT_TRUE(signed_payload.ok());
  std::string altered = *signed_payload;
  altered.back() ^= 1;
  EXPECT_THAT(Verifier().Verify(Header(), kHospital, altered).status().message(),
              HasSubstr("does not verify"));
  ListHeader other = Header();
  other.purpose = "marginals/sums@plan+alignment";
  EXPECT_THAT(Verifier().Verify(other, kHospital, *signed_payload).status().message(),
              HasSubstr("does not verify"));
  EXPECT_THAT(Verifier().Verify(Header(), kHospital, "ciphertexts").status().message(),
              HasSubstr("not signed"));
  EXPECT_FALSE(Verifier().Verify(Header(), kHospital, "vfsynth-signed-list-v1\x01").ok());
}

TEST_F(SignedListTest, AKeyThatIsNotTheCertificatesIsRefused) {
  EXPECT_FALSE(ListSigner::FromPem(Read("run", "bank.key"), Read("run", "hospital.crt")).ok());
  EXPECT_FALSE(ListSigner::FromPem("", Read("run", "hospital.crt")).ok());
  EXPECT_FALSE(ListVerifier::FromCaPem("").ok());
}

}  // namespace
}  // namespace vfsynth::secure
