#ifndef VFSYNTH_SERVER_CORE_CURATOR_RUN_H_
#define VFSYNTH_SERVER_CORE_CURATOR_RUN_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/base/step_profile.h"
#include "server/core/join_deadline.h"
#include "server/core/registry.h"
#include "server/core/run_checkpoints.h"
#include "server/core/run_status.h"
#include "server/core/session_hub.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// What the run lifecycle (CuratorCore) owns and lends to its protocol: the settings, the
// roster and its registrations, the parties' streams, the status, the checkpoint
// directory. It outlives the protocol.
struct CuratorRun {
  const v1::CuratorConfig& config;
  const std::vector<std::string>& roster;
  const Registry& registry;
  SessionHub& hub;
  StepProfile& profile;
  RunStatus& status;
  RunCheckpoints& checkpoints;
  // Registration, alignment and attestation wait no longer (resuming: the parties' rejoin).
  JoinDeadline& join;
  const bool resume;
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_CURATOR_RUN_H_
