// vfsynth-curator: holds the generator and the shared critic and runs the rounds.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "common/base/cli.h"
#include "common/base/help.h"
#include "common/config/config.h"
#include "server/grpc/curator_server.h"

ABSL_FLAG(std::string, config, "", "curator config JSON (vfsynth.v1.CuratorConfig)");
ABSL_FLAG(std::string, listen, "", "override the config's listen address (host:port)");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");
ABSL_FLAG(bool, resume, false,
          "continue the run from the checkpoint in checkpoint_dir (same run, parties and records)");
ABSL_FLAG(double, shutdown_grace_seconds, 5, "grace period for open streams on SIGTERM");

int main(int argc, char** argv) {
  vfsynth::EnsurePassiveOpenMpWait(argv);
  vfsynth::TuneMemoryAllocator();
  const std::string usage = "vfsynth-curator --config curator.json [--resume]   (settings: docs/configuration.md)";
  absl::SetProgramUsageMessage(usage);
  std::vector<std::string> args = vfsynth::NormalizeFlagNames(argc, argv);
  if (vfsynth::AsksForHelp(args)) {
    std::printf("%s", vfsynth::HelpText(usage, {"curator_main"}).c_str());
    return 0;
  }
  std::vector<char*> raw;
  for (std::string& arg : args) raw.push_back(arg.data());
  absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data());
  vfsynth::InitLogging("curator", absl::GetFlag(FLAGS_log_level));
  if (absl::GetFlag(FLAGS_config).empty()) {
    spdlog::error("--config is required");
    return 2;
  }
  auto config = vfsynth::LoadCuratorConfig(absl::GetFlag(FLAGS_config));
  if (!config.ok()) {
    spdlog::error("{}", config.status().ToString());
    return 2;
  }
  if (!absl::GetFlag(FLAGS_listen).empty()) config->set_listen(absl::GetFlag(FLAGS_listen));
  torch::set_num_threads(config->training().threads());
  vfsynth::LogComputeSettings(config->training().threads());

  // Signals are taken by a dedicated thread (no gRPC calls from a signal handler).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = vfsynth::CuratorServer::BuildAndStart({*config, absl::GetFlag(FLAGS_resume)});
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  std::atomic<bool> done{false};
  std::thread signal_thread([&signals, &server, &done] {
    int signal = 0;
    sigwait(&signals, &signal);
    if (done) return;
    spdlog::warn("signal {} received: stopping", signal);
    (*server)->core().Cancel(absl::CancelledError("curator received a stop signal"));
  });
  const absl::Status status = (*server)->Run();
  done = true;
  (*server)->Shutdown(absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds)));
  // Wake the signal thread if no signal came.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  if (!status.ok()) {
    spdlog::error("run failed: {}", status.ToString());
    return 1;
  }
  spdlog::info("run finished");
  return 0;
}
