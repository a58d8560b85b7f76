#include "server/grpc/curator_server.h"

#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/base/writable_directory.h"
#include "common/net/tls.h"
#include "common/postgres/postgres_target.h"
#include "server/core/curator_checkpoint.h"
#include "server/core/curator_protocol_factory.h"
#include "server/core/metrics_text.h"

namespace vfsynth {

absl::StatusOr<std::unique_ptr<CuratorServer>> CuratorServer::BuildAndStart(Options options) {
  ASSIGN_OR_RETURN(auto credentials,
                   MakeServerCredentials(options.config.listen(), options.config.tls(),
                                         options.config.plaintext()));
  if (options.config.plaintext()) {
    spdlog::warn("PLAINTEXT mode: no TLS, no client authentication (loopback tests only)");
  }
  if (const std::string& output = options.config.output().synthetic_csv(); !output.empty()) {
    RETURN_IF_ERROR(CheckWritableDirectoryFor(output, "output.synthetic_csv"));
  }
  // Found now, not after the budget is spent: a server that refuses us or a table in the way.
  if (options.config.output().has_postgres())
    RETURN_IF_ERROR(CheckPostgresTarget(options.config.output().postgres()));
  ASSIGN_OR_RETURN(std::string run_nonce,
                   CheckCuratorCheckpointOnStartup(options.config, options.resume));
  std::unique_ptr<CuratorServer> server(new CuratorServer());
  server->core_ = std::make_unique<CuratorCore>(
      options.config, CuratorProtocolFor(options.config), std::move(run_nonce), options.resume);
  server->service_ = std::make_unique<CuratorService>(server->core_.get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.config.listen(), credentials, &server->port_);
  ApplyServerArguments(options.config.max_message_bytes(), &builder);
  builder.RegisterService(server->service_.get());
  {
    absl::MutexLock lock(&server->server_mu_);
    server->server_ = builder.BuildAndStart();
    if (server->server_ == nullptr || server->port_ == 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", options.config.listen(),
                                                 " (address in use, or not this host's)"));
    }
    if (!options.config.health_listen().empty()) {
      RETURN_IF_ERROR(server->StartHealthServer(options.config.health_listen()));
    }
    server->SetServing(true);
  }
  if (!options.config.metrics_listen().empty()) {
    CuratorCore* core = server->core_.get();
    ASSIGN_OR_RETURN(server->metrics_,
                     MetricsServer::Start(options.config.metrics_listen(), [core] {
                       return FormatPrometheusMetrics(core->Status());
                     }));
  }
  spdlog::info("curator for run '{}' listening on port {} ({} parties)", options.config.run_id(),
               server->port_, options.config.parties_size());
  return server;
}

absl::Status CuratorServer::StartHealthServer(const std::string& listen) {
  // No vfsynth service is registered: the default health service is all this port
  // serves, so a peer without a certificate learns SERVING or NOT_SERVING and nothing else.
  // (gRPC starts no server without a service of its own to poll for: the generic one.)
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &health_port_);
  // Anyone who reaches this port may call it: a health check is a few bytes, a prober
  // needs a stream or two, and idle or long-lived connections are closed.
  constexpr int64_t kHealthMessageBytes = 1024;
  ApplyServerArguments(kHealthMessageBytes, &builder);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 4);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, 600'000);
  grpc::ResourceQuota quota("vfsynth-health");
  quota.Resize(16 << 20);
  quota.SetMaxThreads(4);
  builder.SetResourceQuota(quota);
  builder.RegisterCallbackGenericService(&unimplemented_);
  health_server_ = builder.BuildAndStart();
  if (health_server_ == nullptr || health_port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on health_listen ", listen,
                                               " (address in use, or not this host's)"));
  }
  spdlog::info("gRPC health service alone, in plaintext, on port {}", health_port_);
  return absl::OkStatus();
}

void CuratorServer::SetServing(bool serving) {
  server_->GetHealthCheckService()->SetServingStatus(serving);
  if (health_server_ != nullptr) health_server_->GetHealthCheckService()->SetServingStatus(serving);
}

CuratorServer::~CuratorServer() { Shutdown(absl::Seconds(1)); }

absl::Status CuratorServer::Run() {
  absl::Status status = core_->Run();
  absl::MutexLock lock(&server_mu_);
  // Shut down already when Shutdown, from another thread, ended the run.
  if (server_ != nullptr) SetServing(false);
  return status;
}

void CuratorServer::Shutdown(absl::Duration grace) {
  metrics_.reset();
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<grpc::Server> health_server;
  {
    absl::MutexLock lock(&server_mu_);
    server = std::move(server_);
    health_server = std::move(health_server_);
  }
  if (health_server != nullptr) health_server->Shutdown(absl::ToChronoTime(absl::Now()));
  if (server == nullptr) return;
  core_->Cancel(absl::CancelledError("curator is shutting down"));
  server->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server->Wait();
}

}  // namespace vfsynth
