// The curator's /metrics endpoint: where it may listen.
#include "server/grpc/metrics_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

// Plain HTTP without authentication: the endpoint binds loopback only.
TEST(MetricsServerTest, BindsLoopbackOnly) {
  auto render = [] { return std::string("vfsynth_round 0\n"); };
  for (const std::string listen : {"0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.org:0"}) {
    auto server = MetricsServer::Start(listen, render);
    ASSERT_FALSE(server.ok()) << listen;
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << listen;
    EXPECT_THAT(server.status().message(), HasSubstr("loopback")) << listen;
  }
  auto local = MetricsServer::Start("127.0.0.1:0", render);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_GT((*local)->port(), 0);
  EXPECT_TRUE(IsLoopbackHost("localhost") && IsLoopbackHost("::1") && IsLoopbackHost("127.8.9.10"));
}

}  // namespace
}  // namespace vfsynth
