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

TEST(QuotedValueTest, LongValuesAreCutWithTheirLength) {
  EXPECT_EQ(QuotedValue("red"), "'red'");
  const std::string quoted = QuotedValue(std::string(50 << 20, 'x'));
  EXPECT_LT(quoted.size(), 100u);
  EXPECT_THAT(quoted, HasSubstr("...' (52428800 bytes)"));
}

}  // namespace
}  // namespace vfsynth
