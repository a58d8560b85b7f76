#ifndef VFSYNTH_SERVER_GRPC_METRICS_SERVER_H_
#define VFSYNTH_SERVER_GRPC_METRICS_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace vfsynth {

// A plain-HTTP endpoint serving GET /metrics (Prometheus text format) from `render`,
// on its own thread. Stops when destroyed.
class MetricsServer {
 public:
  // `listen` is "host:port" (port 0: any free port).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& listen,
                                                              std::function<std::string()> render);
  ~MetricsServer();

  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_GRPC_METRICS_SERVER_H_
