#ifndef VFSYNTH_TESTS_BENCH_TCP_RELAY_H_
#define VFSYNTH_TESTS_BENCH_TCP_RELAY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace vfsynth::bench {

// A byte-counting TCP relay on 127.0.0.1: each accepted connection is forwarded to
// 127.0.0.1:upstream_port. It counts what really crosses the wire (TLS records,
// HTTP/2 frames, gRPC framing, protobuf), both directions, every connection.
class TcpRelay {
 public:
  static absl::StatusOr<std::unique_ptr<TcpRelay>> Start(int upstream_port);
  ~TcpRelay();  // closes every connection and joins the threads

  int port() const { return port_; }
  int64_t bytes() const { return bytes_.load(); }

 private:
  TcpRelay(int listen_fd, int port, int upstream_port)
      : listen_fd_(listen_fd), port_(port), upstream_port_(upstream_port) {}
  void AcceptLoop();
  void Pump(int from, int to);

  const int listen_fd_;
  const int port_;
  const int upstream_port_;
  std::atomic<int64_t> bytes_{0};
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  absl::Mutex mu_;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> pumps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vfsynth::bench

#endif  // VFSYNTH_TESTS_BENCH_TCP_RELAY_H_
