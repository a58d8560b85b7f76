// `vfsynth`: the user-facing tool. Subcommands live in client/*_command.cc and
// register themselves in the CommandRegistry.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "client/cli/command_registry.h"
#include "common/base/cli.h"

ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");

namespace vfsynth {

std::map<std::string, Command>& CommandRegistry() {
  static auto* registry = new std::map<std::string, Command>();
  return *registry;
}

namespace {

std::string Usage() {
  std::string usage = "vfsynth <command> [flags]\ncommands:\n";
  for (const auto& [name, command] : CommandRegistry()) usage += "  " + command.usage + "\n";
  usage += "Flags may be written --a-b or --a_b. 'vfsynth --help' lists every flag.";
  return usage;
}

}  // namespace
}  // namespace vfsynth

int main(int argc, char** argv) {
  vfsynth::EnsurePassiveOpenMpWait(argv);
  vfsynth::TuneMemoryAllocator();
  const std::string usage = vfsynth::Usage();
  absl::SetProgramUsageMessage(usage);
  std::vector<std::string> args = vfsynth::NormalizeFlagNames(argc, argv);
  std::vector<char*> raw;
  for (std::string& arg : args) raw.push_back(arg.data());
  const std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data());
  vfsynth::InitLogging("vfsynth", absl::GetFlag(FLAGS_log_level));
  if (positional.size() < 2) {
    std::fprintf(stderr, "%s\n", usage.c_str());
    return 2;
  }
  const auto it = vfsynth::CommandRegistry().find(positional[1]);
  if (it == vfsynth::CommandRegistry().end()) {
    std::fprintf(stderr, "unknown command '%s'\n%s\n", positional[1], usage.c_str());
    return 2;
  }
  const std::vector<std::string> command_args(positional.begin() + 2, positional.end());
  const absl::Status status = it->second.run(command_args);
  if (!status.ok()) {
    spdlog::error("{}", status.ToString());
    return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
