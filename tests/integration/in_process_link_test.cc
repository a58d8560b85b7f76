// The audit's in-process link behaves as the gRPC one does at its edges: the link is the
// party's identity, and Cancel ends an open stream and every later call.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "client/cli/in_process_curator_link.h"
#include "common/config/config.h"
#include "common/protocol/protocol_version.h"
#include "server/core/vertical_rounds.h"

namespace vfsynth {
namespace {

namespace fs = std::filesystem;

class InProcessCuratorLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        (fs::temp_directory_path() / absl::StrCat("vfsynth_in_process_link_", getpid())).string();
    v1::CuratorConfig config;
    config.set_run_id("link-run");
    config.set_plaintext(true);
    config.add_parties("hospital");
    config.add_parties("bank");
    config.set_checkpoint_dir(dir_);
    config.set_join_timeout_seconds(30);
    config.mutable_privacy()->set_mode(v1::PrivacyConfig::none);
    const absl::Status resolved = ResolveCuratorConfig("", &config);
    ASSERT_TRUE(resolved.ok()) << resolved;
    curator_ = std::make_unique<CuratorCore>(config, std::make_unique<VerticalRounds>(config),
                                             std::string(64, 'c'));
  }
  void TearDown() override {
    curator_.reset();
    fs::remove_all(dir_);
  }

  v1::PartyMessage Hello(const std::string& party) {
    v1::PartyMessage hello;
    hello.set_run_id("link-run");
    hello.mutable_hello()->set_party(party);
    hello.mutable_hello()->set_protocol_version(kProtocolVersion);
    return hello;
  }

  std::string dir_;
  std::unique_ptr<CuratorCore> curator_;
};

TEST_F(InProcessCuratorLinkTest, ACallNamingAnotherPartyIsRefused) {
  InProcessCuratorLink link(curator_.get(), "hospital");
  ASSERT_TRUE(link.Connect(absl::Seconds(1)).ok());
  v1::RegisterRequest request;
  request.set_party("bank");
  const absl::Status status = link.Register(request, absl::Seconds(1)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_NE(status.message().find("Register: 'bank' is not this link's party 'hospital'"),
            std::string::npos)
      << status;

  auto stream = link.OpenTrain();
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE((*stream)->Write(Hello("bank")));
  v1::CuratorMessage message;
  EXPECT_FALSE((*stream)->Read(&message));
  EXPECT_EQ((*stream)->Finish().code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(InProcessCuratorLinkTest, ATrainStreamBeforeThePlanIsAttestedIsRefused) {
  InProcessCuratorLink link(curator_.get(), "hospital");
  auto stream = link.OpenTrain();
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE((*stream)->Write(Hello("hospital")));
  const absl::Status status = (*stream)->Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("Train stream: "), std::string::npos) << status;
}

TEST_F(InProcessCuratorLinkTest, CancelEndsAnOpenStreamAndEveryLaterCall) {
  InProcessCuratorLink link(curator_.get(), "hospital");
  auto stream = link.OpenTrain();
  ASSERT_TRUE(stream.ok()) << stream.status();
  // Nothing sent yet: the curator's side waits for the Hello until the link is cancelled.
  link.Cancel();
  v1::CuratorMessage message;
  EXPECT_FALSE((*stream)->Read(&message));
  EXPECT_FALSE((*stream)->Finish().ok());
  EXPECT_EQ(link.Connect(absl::Seconds(1)).code(), absl::StatusCode::kCancelled);
  v1::RegisterRequest request;
  request.set_party("hospital");
  EXPECT_EQ(link.Register(request, absl::Seconds(1)).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(link.OpenTrain().status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace vfsynth
