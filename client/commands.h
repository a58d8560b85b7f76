#ifndef VFSYNTH_CLIENT_COMMANDS_H_
#define VFSYNTH_CLIENT_COMMANDS_H_

#include "absl/status/status.h"

namespace vfsynth {

// Subcommands of the `vfsynth` tool; each reads its own absl flags.
absl::Status RunSplitCommand();
absl::Status RunTrainLocalCommand();

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_COMMANDS_H_
