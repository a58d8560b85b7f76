// vfsynth-party: one per institution; holds its private columns and local critic.
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "absl/flags/flag.h"
#include "client/grpc/party_daemon.h"
#include "common/base/address.h"
#include "common/base/cli.h"
#include "common/base/help.h"
#include "common/base/program_start.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"

ABSL_FLAG(std::string, config, "", "party config JSON (vfsynth.v1.PartyConfig)");
ABSL_FLAG(std::string, curator, "", "override the config's curator address (host:port)");
ABSL_FLAG(bool, resume, false,
          "continue from this party's checkpoint (checkpoint_dir) after a restart");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");
ABSL_FLAG(std::string, profile_out, "",
          "at exit, write this party's per-step time breakdown here (JSON, docs/performance.md)");

int main(int argc, char** argv) {
  const std::string usage =
      "vfsynth-party --config party.json [--resume]   (settings: docs/configuration.md)";
  const vfsynth::ProgramStart start = vfsynth::StartProgram(
      argc, argv, usage,
      [&](const std::vector<std::string>&) { return vfsynth::HelpText(usage, {"party_main"}); });
  if (start.answered_help) return 0;
  if (absl::GetFlag(FLAGS_config).empty()) {
    vfsynth::InitLogging("party", absl::GetFlag(FLAGS_log_level));
    spdlog::error("--config is required");
    return 2;
  }
  // --curator is checked like the config's curator address it replaces.
  const std::string curator = absl::GetFlag(FLAGS_curator);
  const auto load = [&]() -> absl::StatusOr<vfsynth::v1::PartyConfig> {
    if (curator.empty()) return vfsynth::LoadPartyConfig(absl::GetFlag(FLAGS_config));
    RETURN_IF_ERROR(vfsynth::ParseHostPort(curator, "--curator", /*min_port=*/1).status());
    return vfsynth::LoadPartyConfig(absl::GetFlag(FLAGS_config),
                                    [&](vfsynth::v1::PartyConfig* c) { c->set_curator(curator); });
  };
  auto config = load();
  vfsynth::InitLogging(config.ok() ? "party " + config->name() : "party",
                       absl::GetFlag(FLAGS_log_level));
  if (!config.ok()) {
    spdlog::error("{}", config.status().ToString());
    return 2;
  }
  torch::set_num_threads(config->threads());
  vfsynth::LogComputeSettings(config->threads());

  vfsynth::StopSignals signals;
  auto daemon = vfsynth::PartyDaemon::BuildAndStart({*config, absl::GetFlag(FLAGS_resume)});
  if (!daemon.ok()) {
    spdlog::error("{}", daemon.status().ToString());
    return 2;
  }
  signals.Watch([&daemon](int signal) {
    spdlog::warn("signal {} received: leaving the run", signal);
    (*daemon)->Cancel();
  });
  const absl::Status status = (*daemon)->Run();
  signals.Finish();
  if (!absl::GetFlag(FLAGS_profile_out).empty()) {
    const absl::Status written =
        vfsynth::WriteStepProfile((*daemon)->profile(), absl::GetFlag(FLAGS_profile_out));
    if (!written.ok()) spdlog::error("step profile: {}", written.ToString());
  }
  if (!status.ok()) {
    spdlog::error("{}", status.ToString());
    return 1;
  }
  spdlog::info("run finished");
  return 0;
}
