#include "server/grpc/metrics_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/base/address.h"

namespace vfsynth {

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::function<std::string()> render) {
  auto address = ParseHostPort(listen, "metrics_listen");
  if (!address.ok()) return address.status();
  if (!IsLoopbackHost(address->first)) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics_listen '", listen,
                     "': the metrics endpoint is plain HTTP without authentication, so it "
                     "binds a loopback address only (127.0.0.1:PORT or [::1]:PORT); scrape it "
                     "through an agent on the "
                     "curator's host, or use `vfsynth status` over mTLS"));
  }
  std::unique_ptr<MetricsServer> metrics(new MetricsServer());
  metrics->server_ = std::make_unique<httplib::Server>();
  // No SO_REUSEPORT (httplib's default sets it): a second endpoint on the port must fail.
  metrics->server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Each connection holds one of a few worker threads while it waits: idle scrapers
  // are dropped quickly so they cannot starve the next scrape.
  metrics->server_->set_read_timeout(1, 0);
  metrics->server_->set_keep_alive_timeout(1);
  metrics->server_->set_keep_alive_max_count(10);
  metrics->server_->Get("/metrics", [render = std::move(render)](const httplib::Request&,
                                                                 httplib::Response& response) {
    response.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  const auto& [host, port] = *address;
  metrics->port_ = port == 0 ? metrics->server_->bind_to_any_port(host)
                             : (metrics->server_->bind_to_port(host, port) ? port : -1);
  if (metrics->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("metrics endpoint cannot listen on ", listen,
                                               " (address in use, or not this host's)"));
  }
  metrics->thread_ =
      std::thread([server = metrics->server_.get()] { server->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs: wait for it, so that destroying
  // the server right after Start cannot leave the loop (and join) running forever.
  for (int i = 0; i < 5000 && !metrics->server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  spdlog::info("metrics at http://{}:{}/metrics", host, metrics->port_);
  return metrics;
}

MetricsServer::~MetricsServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vfsynth
