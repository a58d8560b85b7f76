// `vfsynth`: the user-facing tool (split, train-local; more subcommands join as
// their modules land).
#include <spdlog/spdlog.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "client/commands.h"
#include "common/util/cli.h"

ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");

namespace {

constexpr char kUsage[] =
    "vfsynth <command> [flags]\n"
    "commands:\n"
    "  split        --input T.csv --schema S.json --parties P.json --out DIR\n"
    "  train-local  --config C.json [--rounds N] [--rows N] [--output F.csv]\n"
    "Run 'vfsynth --help' for every flag.";

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<std::string> args = vfsynth::NormalizeFlagNames(argc, argv);
  std::vector<char*> raw;
  for (std::string& arg : args) raw.push_back(arg.data());
  const std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data());
  vfsynth::InitLogging("vfsynth", absl::GetFlag(FLAGS_log_level));
  if (positional.size() != 2) {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  const std::string command = positional[1];
  absl::Status status;
  if (command == "split") {
    status = vfsynth::RunSplitCommand();
  } else if (command == "train-local") {
    status = vfsynth::RunTrainLocalCommand();
  } else {
    std::fprintf(stderr, "unknown command '%s'\n%s\n", command.c_str(), kUsage);
    return 2;
  }
  if (!status.ok()) {
    spdlog::error("{}", status.ToString());
    return 1;
  }
  return 0;
}
