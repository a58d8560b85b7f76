#ifndef VFSYNTH_COMMON_UTIL_CLI_H_
#define VFSYNTH_COMMON_UTIL_CLI_H_

#include <string>
#include <vector>

namespace vfsynth {

// absl flag names cannot contain '-', but users (and DESIGN §8) write
// --noise-multiplier: rewrite "--a-b[=v]" to "--a_b[=v]" before absl parses argv.
std::vector<std::string> NormalizeFlagNames(int argc, char** argv);

// Sets the spdlog pattern (ISO time, level, logger name) and level ("info" etc.).
void InitLogging(const std::string& name, const std::string& level = "info");

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_UTIL_CLI_H_
