// vfsynth-party: one per institution; holds its private columns and local critic.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "client/grpc/party_daemon.h"
#include "common/base/cli.h"
#include "common/base/help.h"
#include "common/config/config.h"

ABSL_FLAG(std::string, config, "", "party config JSON (vfsynth.v1.PartyConfig)");
ABSL_FLAG(std::string, curator, "", "override the config's curator address (host:port)");
ABSL_FLAG(bool, resume, false,
          "continue from this party's checkpoint (checkpoint_dir) after a restart");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");
ABSL_FLAG(std::string, profile_out, "",
          "at exit, write this party's per-step time breakdown here (JSON, docs/performance.md)");

int main(int argc, char** argv) {
  vfsynth::EnsurePassiveOpenMpWait(argv);
  vfsynth::TuneMemoryAllocator();
  const std::string usage = "vfsynth-party --config party.json [--resume]   (settings: docs/configuration.md)";
  absl::SetProgramUsageMessage(usage);
  std::vector<std::string> args = vfsynth::NormalizeFlagNames(argc, argv);
  if (vfsynth::AsksForHelp(args)) {
    std::printf("%s", vfsynth::HelpText(usage, {"party_main"}).c_str());
    return 0;
  }
  std::vector<char*> raw;
  for (std::string& arg : args) raw.push_back(arg.data());
  absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data());
  if (absl::GetFlag(FLAGS_config).empty()) {
    vfsynth::InitLogging("party", absl::GetFlag(FLAGS_log_level));
    spdlog::error("--config is required");
    return 2;
  }
  auto config = vfsynth::LoadPartyConfig(absl::GetFlag(FLAGS_config));
  vfsynth::InitLogging(config.ok() ? "party " + config->name() : "party", absl::GetFlag(FLAGS_log_level));
  if (!config.ok()) {
    spdlog::error("{}", config.status().ToString());
    return 2;
  }
  if (!absl::GetFlag(FLAGS_curator).empty()) config->set_curator(absl::GetFlag(FLAGS_curator));
  torch::set_num_threads(config->threads());
  vfsynth::LogComputeSettings(config->threads());

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto daemon = vfsynth::PartyDaemon::BuildAndStart({*config, absl::GetFlag(FLAGS_resume)});
  if (!daemon.ok()) {
    spdlog::error("{}", daemon.status().ToString());
    return 2;
  }
  std::atomic<bool> done{false};
  std::thread signal_thread([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    if (done) return;
    spdlog::warn("signal {} received: leaving the run", signal);
    (*daemon)->Cancel();
  });
  const absl::Status status = (*daemon)->Run();
  done = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  if (!absl::GetFlag(FLAGS_profile_out).empty()) {
    const absl::Status written = vfsynth::WriteStepProfile((*daemon)->profile(), absl::GetFlag(FLAGS_profile_out));
    if (!written.ok()) spdlog::error("step profile: {}", written.ToString());
  }
  if (!status.ok()) {
    spdlog::error("{}", status.ToString());
    return 1;
  }
  spdlog::info("run finished");
  return 0;
}
