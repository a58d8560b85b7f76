#include "server/grpc/metrics_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/base/address.h"

namespace vfsynth {
namespace {

using Clock = std::chrono::steady_clock;

// A scrape sends a few hundred bytes and reads a few kilobytes: whoever takes longer
// than this, or sends more, is not a scraper.
constexpr auto kConnectionLifetime = std::chrono::seconds(5);
constexpr size_t kMaxRequestBytes = 8192;
// Open connections at once; past it the oldest is closed for the newcomer, so a flood
// of idle connections delays a scrape by at most one poll round.
constexpr size_t kMaxConnections = 256;

struct Connection {
  int fd = -1;
  Clock::time_point deadline;
  std::string request;
  std::string response;  // non-empty once the request is answered
  size_t sent = 0;
};

std::string HttpResponse(absl::string_view status, absl::string_view content_type,
                         const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
}

// The answer to one request head (everything before its blank line).
std::string Answer(absl::string_view head, const std::function<std::string()>& render) {
  const absl::string_view line = head.substr(0, head.find("\r\n"));
  const bool get = absl::StartsWith(line, "GET ");
  const bool head_method = absl::StartsWith(line, "HEAD ");
  if (!get && !head_method) return HttpResponse("405 Method Not Allowed", "text/plain", "");
  absl::string_view target = line.substr(line.find(' ') + 1);
  target = target.substr(0, target.find(' '));
  target = target.substr(0, target.find('?'));
  if (target != "/metrics") return HttpResponse("404 Not Found", "text/plain", "not found\n");
  std::string response =
      HttpResponse("200 OK", "text/plain; version=0.0.4; charset=utf-8", render());
  if (head_method) response.resize(response.find("\r\n\r\n") + 4);
  return response;
}

// Reads what `connection` sent; false once it is to be closed.
bool ReadRequest(Connection& connection, const std::function<std::string()>& render) {
  char buffer[4096];
  const ssize_t got = recv(connection.fd, buffer, sizeof(buffer), 0);
  if (got == 0) return false;
  if (got < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  connection.request.append(buffer, static_cast<size_t>(got));
  const size_t end = connection.request.find("\r\n\r\n");
  if (end != std::string::npos) {
    connection.response = Answer(absl::string_view(connection.request).substr(0, end), render);
  } else if (connection.request.size() > kMaxRequestBytes) {
    connection.response = HttpResponse("431 Request Header Fields Too Large", "text/plain", "");
  }
  return true;
}

// Sends what is left of the answer; false once it is sent or the peer went away.
bool WriteResponse(Connection& connection) {
  const ssize_t put = send(connection.fd, connection.response.data() + connection.sent,
                           connection.response.size() - connection.sent, MSG_NOSIGNAL);
  if (put < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  connection.sent += static_cast<size_t>(put);
  return connection.sent < connection.response.size();
}

// A non-blocking listening socket on `host`:`port`; -1 if none could be bound.
int Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR for a quick restart; no SO_REUSEPORT: a second endpoint on the port must fail.
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 128) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  if (address.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

}  // namespace

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
  metrics->render_ = std::move(render);
  metrics->listen_fd_ = Listen(address->first, address->second);
  metrics->port_ = metrics->listen_fd_ < 0 ? -1 : BoundPort(metrics->listen_fd_);
  if (metrics->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("metrics endpoint cannot listen on ", listen,
                                               " (address in use, or not this host's)"));
  }
  if (pipe2(metrics->stop_pipe_, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("metrics endpoint: pipe: ", std::strerror(errno)));
  }
  metrics->thread_ = std::thread([server = metrics.get()] { server->Serve(); });
  spdlog::info("metrics at http://{}:{}/metrics", address->first, metrics->port_);
  return metrics;
}

void MetricsServer::Serve() {
  std::list<Connection> connections;  // oldest first
  std::vector<pollfd> fds;
  while (true) {
    fds.assign({{stop_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    for (const Connection& c : connections)
      fds.push_back({c.fd, static_cast<short>(c.response.empty() ? POLLIN : POLLOUT), 0});
    const int ready = poll(fds.data(), fds.size(), 1000);
    if (ready < 0 && errno != EINTR) {
      spdlog::error("metrics endpoint stopped: poll: {}", std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0) break;
    const Clock::time_point now = Clock::now();
    size_t index = 2;
    for (auto it = connections.begin(); it != connections.end(); ++index) {
      const short events = fds[index].revents;
      bool open = now < it->deadline;
      if (open && (events & (POLLERR | POLLHUP | POLLNVAL)) != 0 && it->response.empty()) {
        open = false;
      } else if (open && (events & POLLIN) != 0) {
        open = ReadRequest(*it, render_);
      } else if (open && (events & POLLOUT) != 0) {
        open = WriteResponse(*it);
      }
      if (open) {
        ++it;
      } else {
        close(it->fd);
        it = connections.erase(it);
      }
    }
    if ((fds[1].revents & POLLIN) == 0) continue;
    while (true) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      if (connections.size() >= kMaxConnections) {
        close(connections.front().fd);
        connections.pop_front();
      }
      Connection& connection = connections.emplace_back();
      connection.fd = fd;
      connection.deadline = now + kConnectionLifetime;
    }
  }
  for (const Connection& c : connections) close(c.fd);
}

MetricsServer::~MetricsServer() {
  if (thread_.joinable()) {
    const char stop = 1;
    if (write(stop_pipe_[1], &stop, 1) != 1) spdlog::error("metrics endpoint: cannot stop");
    thread_.join();
  }
  for (const int fd : {listen_fd_, stop_pipe_[0], stop_pipe_[1]}) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace vfsynth
