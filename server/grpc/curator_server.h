#ifndef VFSYNTH_SERVER_GRPC_CURATOR_SERVER_H_
#define VFSYNTH_SERVER_GRPC_CURATOR_SERVER_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/core/curator_core.h"
#include "server/grpc/curator_service.h"
#include "server/grpc/metrics_server.h"

namespace vfsynth {

// A running curator: core + gRPC server (+ health service). Build with
// CuratorServer::BuildAndStart; Run() blocks for the training job.
class CuratorServer {
 public:
  struct Options {
    v1::CuratorConfig config;  // resolved
    bool resume = false;       // continue from the checkpoint in config.checkpoint_dir
  };

  static absl::StatusOr<std::unique_ptr<CuratorServer>> BuildAndStart(Options options);
  ~CuratorServer();

  // The bound port (useful with "host:0").
  int port() const { return port_; }
  // The bound port of the metrics endpoint (0 when config.metrics_listen is empty).
  int metrics_port() const { return metrics_ == nullptr ? 0 : metrics_->port(); }
  // The bound port of the plaintext health port (0 when config.health_listen is empty).
  int health_port() const { return health_port_; }
  CuratorCore& core() { return *core_; }

  // Runs the job; health (on both ports) turns NOT_SERVING when it ends.
  absl::Status Run();
  // Graceful stop: cancels the job and shuts the server down, cancelling open
  // streams after `grace`.
  void Shutdown(absl::Duration grace);

 private:
  CuratorServer() = default;
  // Starts the plaintext health server on `listen`.
  absl::Status StartHealthServer(const std::string& listen)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(server_mu_);
  void SetServing(bool serving) ABSL_EXCLUSIVE_LOCKS_REQUIRED(server_mu_);
  std::unique_ptr<CuratorCore> core_;
  std::unique_ptr<CuratorService> service_;
  // Shutdown may run on another thread than Run (tests stop a running curator that way).
  absl::Mutex server_mu_;
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(server_mu_);
  // Optional plaintext server with the health service alone; its status mirrors server_'s.
  // Every other method there meets the generic service, which answers UNIMPLEMENTED.
  grpc::CallbackGenericService unimplemented_;
  std::unique_ptr<grpc::Server> health_server_ ABSL_GUARDED_BY(server_mu_);
  std::unique_ptr<MetricsServer> metrics_;  // optional; reads core_
  int port_ = 0;
  int health_port_ = 0;
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_GRPC_CURATOR_SERVER_H_
