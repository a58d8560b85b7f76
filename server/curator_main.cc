// vfsynth-curator: holds the generator and the shared critic and runs the rounds.
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "absl/flags/flag.h"
#include "common/base/address.h"
#include "common/base/cli.h"
#include "common/base/help.h"
#include "common/base/program_start.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "server/grpc/curator_server.h"

ABSL_FLAG(std::string, config, "", "curator config JSON (vfsynth.v1.CuratorConfig)");
ABSL_FLAG(std::string, listen, "", "override the config's listen address (host:port)");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");
ABSL_FLAG(bool, resume, false,
          "continue the run from the checkpoint in checkpoint_dir (same run, parties and records)");
ABSL_FLAG(double, shutdown_grace_seconds, 5, "grace period for open streams on SIGTERM");

int main(int argc, char** argv) {
  const std::string usage =
      "vfsynth-curator --config curator.json [--resume]   (settings: docs/configuration.md)";
  const vfsynth::ProgramStart start = vfsynth::StartProgram(
      argc, argv, usage,
      [&](const std::vector<std::string>&) { return vfsynth::HelpText(usage, {"curator_main"}); });
  if (start.answered_help) return 0;
  vfsynth::InitLogging("curator", absl::GetFlag(FLAGS_log_level));
  if (absl::GetFlag(FLAGS_config).empty()) {
    spdlog::error("--config is required");
    return 2;
  }
  // --listen is checked like the config's listen address it replaces.
  const std::string listen = absl::GetFlag(FLAGS_listen);
  const auto load = [&]() -> absl::StatusOr<vfsynth::v1::CuratorConfig> {
    if (listen.empty()) return vfsynth::LoadCuratorConfig(absl::GetFlag(FLAGS_config));
    RETURN_IF_ERROR(vfsynth::ParseHostPort(listen, "--listen").status());
    return vfsynth::LoadCuratorConfig(absl::GetFlag(FLAGS_config),
                                      [&](vfsynth::v1::CuratorConfig* c) { c->set_listen(listen); });
  };
  auto config = load();
  if (!config.ok()) {
    spdlog::error("{}", config.status().ToString());
    return 2;
  }
  torch::set_num_threads(config->training().threads());
  vfsynth::LogComputeSettings(config->training().threads());

  vfsynth::StopSignals signals;
  auto server = vfsynth::CuratorServer::BuildAndStart({*config, absl::GetFlag(FLAGS_resume)});
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  signals.Watch([&server](int signal) {
    spdlog::warn("signal {} received: stopping", signal);
    (*server)->core().Cancel(absl::CancelledError("curator received a stop signal"));
  });
  const absl::Status status = (*server)->Run();
  signals.Finish();
  (*server)->Shutdown(absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds)));
  if (!status.ok()) {
    spdlog::error("run failed: {}", status.ToString());
    return 1;
  }
  spdlog::info("run finished");
  return 0;
}
