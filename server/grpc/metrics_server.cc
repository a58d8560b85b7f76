#include "server/grpc/metrics_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {

absl::StatusOr<std::pair<std::string, int>> ParseHostPort(const std::string& address,
                                                         const std::string& what) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", address, "' is not host:port (port 0-65535)"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return std::make_pair(host, port);
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::function<std::string()> render) {
  auto address = ParseHostPort(listen, "metrics_listen");
  if (!address.ok()) return address.status();
  if (!IsLoopbackHost(address->first)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics_listen '", listen, "': the metrics endpoint is plain HTTP without authentication, so it "
        "binds a loopback address only (127.0.0.1:PORT or [::1]:PORT); scrape it through an agent on the "
        "curator's host, or use `vfsynth status` over mTLS"));
  }
  std::unique_ptr<MetricsServer> metrics(new MetricsServer());
  metrics->server_ = std::make_unique<httplib::Server>();
  metrics->server_->Get("/metrics", [render = std::move(render)](const httplib::Request&,
                                                                 httplib::Response& response) {
    response.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  const auto& [host, port] = *address;
  metrics->port_ = port == 0 ? metrics->server_->bind_to_any_port(host)
                             : (metrics->server_->bind_to_port(host, port) ? port : -1);
  if (metrics->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("metrics endpoint cannot listen on ", listen));
  }
  metrics->thread_ = std::thread([server = metrics->server_.get()] { server->listen_after_bind(); });
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
