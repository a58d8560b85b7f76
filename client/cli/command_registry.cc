#include "client/cli/command_registry.h"

#include <exception>

#include "absl/strings/str_cat.h"

namespace vfsynth {

std::map<std::string, Command>& CommandRegistry() {
  static auto* registry = new std::map<std::string, Command>();
  return *registry;
}

absl::Status RunCommand(const std::string& name, const Command& command,
                        const std::vector<std::string>& args) {
  try {
    return command.run(args);
  } catch (const std::exception& e) {  // LibTorch reports its errors (c10::Error) by throwing
    return absl::InternalError(absl::StrCat(name, ": ", e.what()));
  }
}

int ExitCode(const absl::Status& status) {
  if (status.ok()) return 0;
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace vfsynth
