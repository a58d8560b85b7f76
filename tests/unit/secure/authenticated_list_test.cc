#include "common/secure/authenticated_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace vfsynth::secure
