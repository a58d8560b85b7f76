#ifndef VFSYNTH_SERVER_GRPC_METRICS_SERVER_H_
#define VFSYNTH_SERVER_GRPC_METRICS_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace vfsynth {

// A plain-HTTP endpoint serving GET /metrics (Prometheus text format) from `render`,
// on its own thread. One poll loop serves every connection without blocking on any,
// so connections that send nothing (or send slowly) cannot hold up a scrape; each is
// closed after a few seconds, and past a cap the oldest is dropped for a new one.
// Stops when destroyed.
class MetricsServer {
 public:
  // `listen` is "host:port" on a loopback host (port 0: any free port).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& listen,
                                                              std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsServer() = default;
  void Serve();

  std::function<std::string()> render_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};  // written by the destructor to end Serve
  std::thread thread_;
  int port_ = 0;
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_GRPC_METRICS_SERVER_H_
