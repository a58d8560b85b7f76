#ifndef VFSYNTH_SERVER_CORE_METRICS_TEXT_H_
#define VFSYNTH_SERVER_CORE_METRICS_TEXT_H_

#include <string>

#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// The curator's status in the Prometheus text exposition format (version 0.0.4):
// run progress, privacy spent, losses and per-party liveness and traffic. Only
// numbers the curator already reports through GetStatus; nothing from private data
// beyond what the run's sanitisation releases (docs/operations.md, "Monitoring").
std::string FormatPrometheusMetrics(const v1::StatusResponse& status);

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_METRICS_TEXT_H_
