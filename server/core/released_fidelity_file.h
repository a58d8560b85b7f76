#ifndef VFSYNTH_SERVER_CORE_RELEASED_FIDELITY_FILE_H_
#define VFSYNTH_SERVER_CORE_RELEASED_FIDELITY_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "vfsynth/v1/released_fidelity.pb.h"

namespace vfsynth {

// The report's file beside a published table (synthetic.csv: synthetic.released.json).
std::string ReleasedFidelityPath(const std::string& table_path);
// Writes `report` there (atomically) and logs its score.
absl::Status WriteReleasedFidelity(const v1::ReleasedFidelity& report,
                                   const std::string& table_path);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_RELEASED_FIDELITY_FILE_H_
