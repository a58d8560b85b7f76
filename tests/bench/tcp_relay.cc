#include "tests/bench/tcp_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace vfsynth::bench {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

void NoDelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpRelay>> TcpRelay::Start(int upstream_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string error = std::strerror(errno);
    ::close(fd);
    return absl::InternalError(absl::StrCat("relay listen: ", error));
  }
  std::unique_ptr<TcpRelay> relay(new TcpRelay(fd, ntohs(addr.sin_port), upstream_port));
  relay->acceptor_ = std::thread([r = relay.get()] { r->AcceptLoop(); });
  return relay;
}

TcpRelay::~TcpRelay() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> pumps;
  {
    absl::MutexLock lock(&mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    pumps.swap(pumps_);
  }
  for (std::thread& pump : pumps) pump.join();
  absl::MutexLock lock(&mu_);
  for (int fd : fds_) ::close(fd);
}

void TcpRelay::AcceptLoop() {
  while (!stopping_) {
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR) continue;
      return;  // shut down
    }
    const int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in addr = Loopback(upstream_port_);
    if (upstream < 0 ||
        ::connect(upstream, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      if (upstream >= 0) ::close(upstream);
      ::close(client);
      continue;
    }
    NoDelay(client);
    NoDelay(upstream);
    absl::MutexLock lock(&mu_);
    fds_.push_back(client);
    fds_.push_back(upstream);
    pumps_.emplace_back([this, client, upstream] { Pump(client, upstream); });
    pumps_.emplace_back([this, client, upstream] { Pump(upstream, client); });
  }
}

void TcpRelay::Pump(int from, int to) {
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(from, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes_ += n;
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t w = ::send(to, buffer + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        ::shutdown(from, SHUT_RD);
        return;
      }
      sent += w;
    }
  }
  ::shutdown(to, SHUT_WR);
}

}  // namespace vfsynth::bench
