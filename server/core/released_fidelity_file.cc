#include "server/core/released_fidelity_file.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"

namespace vfsynth {

std::string ReleasedFidelityPath(const std::string& table_path) {
  return std::filesystem::path(table_path).replace_extension(".released.json").string();
}

absl::Status WriteReleasedFidelity(const v1::ReleasedFidelity& report,
                                   const std::string& table_path) {
  const std::string path = ReleasedFidelityPath(table_path);
  ASSIGN_OR_RETURN(const std::string json, ToJson(report, /*include_defaults=*/true));
  RETURN_IF_ERROR(WriteFileAtomically(path, json));
  spdlog::info(
      "released statistics: the published table scores {:.3f} against {} released histograms; the "
      "true "
      "table would score about {:.3f} from their noise ({})",
      report.score(), report.histograms_size(), 1.0 - report.noise_floor(), path);
  return absl::OkStatus();
}

}  // namespace vfsynth
