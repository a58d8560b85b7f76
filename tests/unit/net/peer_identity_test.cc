#include "common/net/peer_identity.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/net/certificate_validity.h"
#include "common/net/tls.h"
#include "vfsynth/v1/curator.grpc.pb.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const std::vector<std::string> kRoster = {"hospital", "insurer", "bank"};

TEST(PartyFromIdentitiesTest, ExactlyOneRosterMatch) {
  auto party = PartyFromIdentities({"spiffe://vfsynth/party/insurer"}, kRoster);
  ASSERT_TRUE(party.ok()) << party.status();
  EXPECT_EQ(*party, "insurer");
  // Other SANs next to the identity do not matter.
  party =
      PartyFromIdentities({"insurer.example", "spiffe://vfsynth/party/bank", "10.0.0.5"}, kRoster);
  ASSERT_TRUE(party.ok()) << party.status();
  EXPECT_EQ(*party, "bank");
}

TEST(PartyFromIdentitiesTest, NoMatchIsPermissionDeniedNamingTheIdentities) {
  auto party = PartyFromIdentities({"spiffe://vfsynth/party/mallory", "mallory.example"}, kRoster);
  EXPECT_EQ(party.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(party.status().message(),
              AllOf(HasSubstr("spiffe://vfsynth/party/mallory"), HasSubstr("mallory.example"),
                    HasSubstr("no party of the roster")));
  EXPECT_EQ(PartyFromIdentities({}, kRoster).status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(PartyFromIdentitiesTest, CertificateNamingTwoPartiesIsRefused) {
  auto party = PartyFromIdentities(
      {"spiffe://vfsynth/party/hospital", "spiffe://vfsynth/party/bank"}, kRoster);
  EXPECT_EQ(party.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(party.status().message(),
              AllOf(HasSubstr("several"), HasSubstr("hospital"), HasSubstr("bank")));
}

TEST(PartyFromIdentitiesTest, OnlyTheExactSpiffeUriMatches) {
  // A DNS or IP SAN equal to a party name, prefixes, suffixes and case variants all fail.
  for (const std::string& identity :
       {std::string("hospital"), std::string("127.0.0.1"), std::string("spiffe://vfsynth/party/"),
        std::string("spiffe://vfsynth/party/hospital/x"),
        std::string("spiffe://vfsynth/party/hospitals"),
        std::string("spiffe://vfsynth/party/Hospital"),
        std::string("spiffe://other/party/hospital"),
        std::string("SPIFFE://vfsynth/party/hospital")}) {
    EXPECT_EQ(PartyFromIdentities({identity}, kRoster).status().code(),
              absl::StatusCode::kPermissionDenied)
        << identity;
  }
  // A roster entry that happens to be an IP is still only matched by its URI.
  EXPECT_FALSE(PartyFromIdentities({"127.0.0.1"}, {"127.0.0.1"}).ok());
}

TEST(AuthenticatedPartyTest, PlaintextTrustsOnlyRosterNames) {
  grpc::ServerContext context;
  auto party = AuthenticatedParty(context, kRoster, /*plaintext=*/true, "bank");
  ASSERT_TRUE(party.ok()) << party.status();
  EXPECT_EQ(*party, "bank");
  party = AuthenticatedParty(context, kRoster, true, "mallory");
  EXPECT_EQ(party.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(party.status().message(), HasSubstr("'mallory' is not in the roster"));
  EXPECT_EQ(AuthenticatedParty(context, kRoster, true, "").status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(AuthenticatedPartyTest, WithoutACertificateIsUnauthenticated) {
  grpc::ServerContext context;  // no call, hence no peer certificate
  auto party = AuthenticatedParty(context, kRoster, /*plaintext=*/false, "hospital");
  EXPECT_EQ(party.status().code(), absl::StatusCode::kUnauthenticated);
}

// Over real mTLS: a Register handler that only reports AuthenticatedParty's verdict.
class EchoIdentityService final : public v1::Curator::Service {
 public:
  grpc::Status Register(grpc::ServerContext* context, const v1::RegisterRequest* request,
                        v1::RegisterResponse* response) override {
    auto party = AuthenticatedParty(*context, kRoster, /*plaintext=*/false, request->party());
    if (!party.ok()) {
      return grpc::Status(static_cast<grpc::StatusCode>(party.status().code()),
                          std::string(party.status().message()));
    }
    response->set_run_id(*party);
    return grpc::Status::OK;
  }
};

class AuthenticatedPartyTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One directory per process: ctest runs this suite's tests in parallel processes,
    // and one's gen-certs.sh would rewrite the files another is reading.
    dir_ =
        new std::string(absl::StrCat(::testing::TempDir(), "/peer_identity_test_certs_", getpid()));
    const std::string command = absl::StrCat("bash ", VFSYNTH_SOURCE_DIR, "/deploy/gen-certs.sh ",
                                             *dir_, " hospital mallory > /dev/null");
    ASSERT_EQ(std::system(command.c_str()), 0);
    // Signed by the run's CA, naming a roster party in its subject CN and carrying no SAN.
    const std::string cn_only = absl::StrCat(
        "cd ", *dir_, " && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes ",
        "-keyout cn-only.key -out cn-only.csr -subj '/CN=spiffe:\\/\\/vfsynth\\/party\\/hospital' "
        "2>/dev/null && ",
        "printf 'extendedKeyUsage=clientAuth\\nbasicConstraints=critical,CA:FALSE\\n' > "
        "cn-only.ext && ",
        "openssl x509 -req -in cn-only.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 ",
        "-extfile cn-only.ext -out cn-only.crt 2>/dev/null");
    ASSERT_EQ(std::system(cn_only.c_str()), 0);
  }

  static v1::TlsConfig Tls(const std::string& name) {
    v1::TlsConfig tls;
    tls.set_ca(*dir_ + "/ca.crt");
    tls.set_cert(*dir_ + "/" + name + ".crt");
    tls.set_key(*dir_ + "/" + name + ".key");
    return tls;
  }

  void SetUp() override {
    auto credentials = MakeServerCredentials("127.0.0.1:0", Tls("curator"), false);
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", *credentials, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  grpc::Status Register(const std::string& cert_name, const std::string& claimed,
                        std::string* party) {
    auto credentials = MakeChannelCredentials(absl::StrCat("127.0.0.1:", port_), Tls(cert_name), false);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    auto stub = v1::Curator::NewStub(grpc::CreateCustomChannel(
        absl::StrCat("127.0.0.1:", port_), *credentials, MakeChannelArguments(1 << 20)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::RegisterRequest request;
    request.set_party(claimed);
    v1::RegisterResponse response;
    grpc::Status status = stub->Register(&context, request, &response);
    *party = response.run_id();
    return status;
  }

  static std::string* dir_;
  EchoIdentityService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

std::string* AuthenticatedPartyTlsTest::dir_ = nullptr;

TEST_F(AuthenticatedPartyTlsTest, CertificateDecidesAndClaimMustAgree) {
  std::string party;
  grpc::Status status = Register("hospital", "hospital", &party);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(party, "hospital");
  // An empty claim is answered by the certificate alone.
  status = Register("hospital", "", &party);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(party, "hospital");

  status = Register("hospital", "bank", &party);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), AllOf(HasSubstr("authenticated as party 'hospital'"),
                                            HasSubstr("claims to be 'bank'")));

  // A valid certificate for a name outside the roster, claiming a roster name.
  status = Register("mallory", "hospital", &party);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("spiffe://vfsynth/party/mallory"));
}

// Credentials without TLS are made for loopback addresses only, on both sides.
TEST(PlaintextCredentialsTest, AreRefusedBeyondLoopback) {
  EXPECT_TRUE(MakeServerCredentials("127.0.0.1:0", {}, /*plaintext=*/true).ok());
  EXPECT_TRUE(MakeChannelCredentials("localhost:50051", {}, /*plaintext=*/true).ok());
  const auto server = MakeServerCredentials("0.0.0.0:50051", {}, /*plaintext=*/true);
  EXPECT_THAT(server.status().message(), HasSubstr("listen '0.0.0.0:50051' is not a loopback"));
  const auto channel = MakeChannelCredentials("curator.example:50051", {}, /*plaintext=*/true);
  EXPECT_THAT(channel.status().message(),
              HasSubstr("curator 'curator.example:50051' is not a loopback"));
}

// A certificate outside its validity period is named with its file and date, with the
// moment to check given.
TEST_F(AuthenticatedPartyTlsTest, CertificatesOutsideTheirValidityAreNamedWithTheirDate) {
  const std::string path = *dir_ + "/hospital.crt";
  const absl::StatusOr<std::string> pem = ReadFile(path);
  ASSERT_TRUE(pem.ok()) << pem.status();
  EXPECT_TRUE(CheckCertificatesValid(*pem, path, "tls.cert").ok());
  const absl::Status expired =
      CheckCertificatesValid(*pem, path, "tls.cert", absl::Now() + absl::Hours(24 * 900));
  EXPECT_EQ(expired.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(expired.message(), AllOf(HasSubstr("tls.cert " + path + ": its certificate expired on "),
                                       HasSubstr(" UTC")));
  const absl::Status early =
      CheckCertificatesValid(*pem, path, "tls.cert", absl::Now() - absl::Hours(24));
  EXPECT_THAT(early.message(), HasSubstr("is not valid before "));
  // The CA file's certificates are checked too (its validity is 3650 days).
  const std::string ca = *dir_ + "/ca.crt";
  EXPECT_THAT(CheckCertificatesValid(*ReadFile(ca), ca, "tls.ca",
                                     absl::Now() + absl::Hours(24 * 3700))
                  .message(),
              HasSubstr("tls.ca " + ca + ": its certificate expired on "));
  EXPECT_THAT(CheckCertificatesValid("not a certificate", path, "tls.cert").message(),
              HasSubstr("not a PEM certificate"));
}

// Servers built with the daemons' arguments do not share a port (no SO_REUSEPORT): a
// second curator on the first one's address fails to start instead of taking parties.
TEST_F(AuthenticatedPartyTlsTest, ASecondServerOnTheSamePortFailsToBind) {
  auto credentials = MakeServerCredentials("127.0.0.1:0", Tls("curator"), false);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EchoIdentityService first_service, second_service;
  auto build = [&](const std::string& address, int* port, EchoIdentityService* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address, *credentials, port);
    builder.RegisterService(service);
    ApplyServerArguments(1 << 20, &builder);
    return builder.BuildAndStart();
  };
  int first_port = 0;
  auto first = build("127.0.0.1:0", &first_port, &first_service);
  ASSERT_NE(first, nullptr);
  ASSERT_GT(first_port, 0);
  int second_port = 0;
  auto second = build(absl::StrCat("127.0.0.1:", first_port), &second_port, &second_service);
  EXPECT_TRUE(second == nullptr || second_port == 0);
  first->Shutdown(std::chrono::system_clock::now());
}

TEST_F(AuthenticatedPartyTlsTest, SubjectCnNamingAPartyIsNotAnIdentity) {
  std::string party;
  const grpc::Status status = Register("cn-only", "hospital", &party);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(),
              AllOf(HasSubstr("no SAN URI"), HasSubstr("never by its subject CN")));
  EXPECT_TRUE(party.empty());
}

}  // namespace
}  // namespace vfsynth
