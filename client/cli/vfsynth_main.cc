// `vfsynth`: the user-facing tool. Subcommands live in client/cli/*_command.cc and
// register themselves in the CommandRegistry.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "client/cli/command_registry.h"
#include "common/base/cli.h"
#include "common/base/help.h"
#include "common/base/program_start.h"

ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");

namespace vfsynth {

namespace {

std::string Usage() {
  std::string usage = "vfsynth <command> [flags]\ncommands:\n";
  for (const auto& [name, command] : CommandRegistry()) usage += "  " + command.usage + "\n";
  usage += "'vfsynth <command> --help' lists a command's flags.";
  return usage;
}

// `vfsynth [<command>] --help`: the command's usage and flags, or the list of commands.
std::string HelpFor(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (absl::StartsWith(args[i], "-")) continue;
    const auto it = CommandRegistry().find(args[i]);
    if (it == CommandRegistry().end()) break;
    const std::string file =
        absl::StrCat(absl::StrReplaceAll(it->first, {{"-", "_"}}), "_command.");
    return HelpText(absl::StrCat("vfsynth ", it->second.usage), {file, "vfsynth_main."},
                    it->second.shared_flags);
  }
  return HelpText(Usage(), {"vfsynth_main."});
}

}  // namespace
}  // namespace vfsynth

int main(int argc, char** argv) {
  const std::string usage = vfsynth::Usage();
  const vfsynth::ProgramStart start = vfsynth::StartProgram(argc, argv, usage, vfsynth::HelpFor);
  if (start.answered_help) return 0;
  const std::vector<char*>& positional = start.positional;
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
  const absl::Status status = vfsynth::RunCommand(positional[1], it->second, command_args);
  if (!status.ok()) spdlog::error("{}", status.ToString());
  return vfsynth::ExitCode(status);
}
