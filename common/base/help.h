#ifndef VFSYNTH_COMMON_BASE_HELP_H_
#define VFSYNTH_COMMON_BASE_HELP_H_

#include <string>
#include <vector>

namespace vfsynth {

// Whether a command line (program name first) asks for help: --help, -h or --helpfull.
bool AsksForHelp(const std::vector<std::string>& args);

// `usage`, then every flag defined in a source file whose name contains one of
// `flag_files` or named in `more_flags`, one line each (--name=default: help), by name.
std::string HelpText(const std::string& usage, const std::vector<std::string>& flag_files,
                     const std::vector<std::string>& more_flags = {});

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_BASE_HELP_H_
