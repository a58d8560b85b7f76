#ifndef VFSYNTH_TESTS_BENCH_DISTRIBUTED_BENCH_H_
#define VFSYNTH_TESTS_BENCH_DISTRIBUTED_BENCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"
#include "vfsynth/v1/profile.pb.h"

namespace vfsynth::bench {

struct DistributedOptions {
  v1::CuratorConfig curator;             // resolved; listens on 127.0.0.1:0
  std::vector<v1::PartyConfig> parties;  // resolved; `curator` is replaced here
  std::string party_binary;              // vfsynth-party
  std::string dir;                       // configs, logs and profiles go here
  bool relay = false;                    // parties dial through a counting TcpRelay
  std::string party_log_level = "warn";
  bool watch_status = false;  // record the run's phases and rounds (status_samples)
};

// The curator's phase and round, each time either changed.
struct StatusSample {
  double seconds = 0;  // since the curator started
  v1::RunPhase phase = v1::unspecified;
  int64_t round = 0;
};

struct DistributedResult {
  v1::StepProfile curator;               // the in-process curator's steps
  std::vector<v1::StepProfile> parties;  // each party process's steps (--profile_out)
  // Bytes, all parties together, from the end of round 0 to the end of the run.
  int counted_rounds = 0;
  int64_t tcp_bytes = 0;      // through the relay (0 without it)
  int64_t message_bytes = 0;  // serialized messages (curator's hub counters)
  std::vector<StatusSample> status_samples;  // with watch_status
  std::optional<v1::PrivacyPlan> plan;       // the run's attested plan
};

// One distributed run over loopback mTLS: the curator in this process (so its step
// profile can be read), each party a separate vfsynth-party process.
absl::StatusOr<DistributedResult> RunDistributed(const DistributedOptions& options);

}  // namespace vfsynth::bench

#endif  // VFSYNTH_TESTS_BENCH_DISTRIBUTED_BENCH_H_
