// The curator's /metrics endpoint: where it may listen.
#include "server/grpc/metrics_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/base/address.h"

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

// Two curators given the same metrics_listen: the second fails at start.
TEST(MetricsServerTest, ASecondEndpointOnTheSamePortFailsToStart) {
  auto render = [] { return std::string("vfsynth_round 0\n"); };
  auto first = MetricsServer::Start("127.0.0.1:0", render);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string listen = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = MetricsServer::Start(listen, render);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("address in use"));
}

// Connections that never send a request, or send half of one, are held while a scrape is
// answered within a scraper's timeout, however many there are.
TEST(MetricsServerTest, IdleConnectionsDoNotBlockAScrape) {
  auto server =
      MetricsServer::Start("127.0.0.1:0", [] { return std::string("vfsynth_round 7\n"); });
  ASSERT_TRUE(server.ok()) << server.status();
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>((*server)->port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    if (i % 2 == 1) ASSERT_EQ(send(fd, "GET /metr", 9, MSG_NOSIGNAL), 9);  // never finished
    idle.push_back(fd);
  }
  httplib::Client client("127.0.0.1", (*server)->port());
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  for (int scrape = 0; scrape < 3; ++scrape) {
    const auto response = client.Get("/metrics");
    ASSERT_TRUE(response) << "scrape " << scrape << ": " << httplib::to_string(response.error());
    EXPECT_EQ(response->status, 200);
    EXPECT_THAT(response->body, HasSubstr("vfsynth_round 7"));
  }
  EXPECT_EQ(client.Get("/other")->status, 404);
  for (const int fd : idle) close(fd);
}

}  // namespace
}  // namespace vfsynth
