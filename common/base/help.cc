#include "common/base/help.h"

#include <algorithm>
#include <map>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {

bool AsksForHelp(const std::vector<std::string>& args) {
  return std::any_of(args.begin() + (args.empty() ? 0 : 1), args.end(), [](const std::string& arg) {
    return arg == "--help" || arg == "-h" || arg == "--helpfull" || arg == "-help";
  });
}

std::string HelpText(const std::string& usage, const std::vector<std::string>& flag_files,
                     const std::vector<std::string>& more_flags) {
  std::map<std::string, const absl::CommandLineFlag*> shown;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const bool listed = std::find(more_flags.begin(), more_flags.end(), name) != more_flags.end();
    const bool own =
        std::any_of(flag_files.begin(), flag_files.end(), [&flag = flag](const std::string& file) {
          return absl::StrContains(flag->Filename(), file);
        });
    if (listed || own) shown.emplace(std::string(name), flag);
  }
  std::string text =
      absl::StrCat("usage: ", usage, "\n\nflags (--a-b and --a_b are the same flag):\n");
  for (const auto& [name, flag] : shown) {
    const std::string value = flag->DefaultValue();
    absl::StrAppend(&text, "  --", name, value.empty() ? "" : absl::StrCat("=", value), "  ",
                    flag->Help(), "\n");
  }
  return text;
}

}  // namespace vfsynth
