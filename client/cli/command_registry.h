#ifndef VFSYNTH_CLIENT_CLI_COMMAND_REGISTRY_H_
#define VFSYNTH_CLIENT_CLI_COMMAND_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace vfsynth {

// A `vfsynth` subcommand. `args` are the positional words after the command name
// (e.g. "epsilon" in `vfsynth privacy epsilon ...`); flags are read with absl.
struct Command {
  std::string usage;  // one line: "<name> --flag X ..."
  std::function<absl::Status(const std::vector<std::string>& args)> run;
  // Flags the command reads that another *_command.cc defines (its own are found by file).
  std::vector<std::string> shared_flags = {};
};

std::map<std::string, Command>& CommandRegistry();

// Runs `command`; an exception it throws (LibTorch's c10::Error, std::bad_alloc) becomes an
// INTERNAL error naming the command instead of ending the process.
absl::Status RunCommand(const std::string& name, const Command& command,
                        const std::vector<std::string>& args);
// The process's exit code for a command's result: 0, 2 for bad input, 1 otherwise.
int ExitCode(const absl::Status& status);

// Registers a command at static-initialisation time; each *_command.cc compiled
// into the vfsynth binary defines one:
//   static CommandRegistration kSplit("split", {"split --input ...", &RunSplit});
struct CommandRegistration {
  CommandRegistration(const std::string& name, Command command) {
    CommandRegistry().emplace(name, std::move(command));
  }
};

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CLI_COMMAND_REGISTRY_H_
