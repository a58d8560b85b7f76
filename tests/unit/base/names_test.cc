// Inputs that end up in paths, sockets and error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/base/address.h"
#include "common/base/party_name.h"
#include "common/base/quoted_value.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

TEST(PartyNameTest, IdentifiersOnly) {
  for (const std::string name : {"hospital", "bank-2", "Insurer_A", "a.b"}) {
    EXPECT_TRUE(ValidatePartyName(name, "party").ok()) << name;
  }
  for (const std::string& name : std::vector<std::string>{"", "../evil", "a/b", ".hidden", "-flag",
                                                          "sp ace", std::string(65, 'a')}) {
    const absl::Status status = ValidatePartyName(name, "party");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(status.message(), HasSubstr("is not a party name")) << name;
  }
  // Their certificates would overwrite the CA's, the curator's or the operator's.
  for (const std::string name : {"ca", "curator", "operator"}) {
    const absl::Status status = ValidatePartyName(name, "party");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(status.message(), HasSubstr("is reserved")) << name;
  }
  absl::flat_hash_set<std::string> seen;
  EXPECT_TRUE(AddUniquePartyName("bank", "party", &seen).ok());
  EXPECT_THAT(AddUniquePartyName("bank", "party", &seen).message(),
              HasSubstr("'bank' is used twice"));
}

TEST(AddressTest, PortsMustBeInRange) {
  const auto parsed = ParseHostPort("[::1]:8080", "listen");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->first, "::1");
  EXPECT_EQ(parsed->second, 8080);
  EXPECT_TRUE(ParseHostPort("127.0.0.1:0", "listen").ok());
  EXPECT_FALSE(ParseHostPort("127.0.0.1:0", "curator", /*min_port=*/1).ok());
  for (const std::string bad : {"127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1", ":80", "host:8x"}) {
    EXPECT_THAT(ParseHostPort(bad, "listen").status().message(), HasSubstr("is not host:port"))
        << bad;
  }
}

// Loopback by IP literal or "localhost" only: a DNS name starting with "127." may
// resolve anywhere.
TEST(AddressTest, LoopbackIsDecidedByTheAddressNotItsSpelling) {
  for (const std::string host : {"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "localhost"})
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  for (const std::string host :
       {"127.evil.example", "127.0.0.1.evil.example", "0.0.0.0", "::", "10.0.0.5", "128.0.0.1",
        "::ffff:10.0.0.5", "", "localhost.evil.example"})
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  EXPECT_TRUE(CheckPlaintextAddress("[::1]:50051", "listen").ok());
  const absl::Status remote = CheckPlaintextAddress("127.evil.example:50051", "curator");
  EXPECT_EQ(remote.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(remote.message(), HasSubstr("curator '127.evil.example:50051' is not a loopback"));
}

TEST(AddressTest, ALongAddressIsCutInItsError) {
  const std::string address(50 << 20, '1');
  const absl::Status status = ParseHostPort(address, "--listen").status();
  EXPECT_LT(status.message().size(), 200u);
  EXPECT_THAT(status.message(), HasSubstr("(52428800 bytes)"));
}

TEST(QuotedValueTest, LongValuesAreCutWithTheirLength) {
  EXPECT_EQ(QuotedValue("red"), "'red'");
  const std::string quoted = QuotedValue(std::string(50 << 20, 'x'));
  EXPECT_LT(quoted.size(), 100u);
  EXPECT_THAT(quoted, HasSubstr("...' (52428800 bytes)"));
}

}  // namespace
}  // namespace vfsynth
