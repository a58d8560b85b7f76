#ifndef VFSYNTH_SERVER_CORE_RUN_CHECKPOINTS_H_
#define VFSYNTH_SERVER_CORE_RUN_CHECKPOINTS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/base/background_task.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/generator.pb.h"

namespace vfsynth {

// What one checkpoint write puts on disk: the protocol's private state and its
// publishable model (G, or the horizontal autoencoder).
struct SavedState {
  std::string checkpoint;
  std::string generator;
};

// The run's checkpoint directory (docs/operations.md, "Failure handling"): each write
// puts the checkpoint, then the generator artefact beside it; parties may forget their
// replies of the rounds before durable_round() only once that write is on disk.
class RunCheckpoints {
 public:
  // Every checkpoint names the run's start, `run_nonce` (common/checkpoint/run_nonce.h).
  RunCheckpoints(const v1::CuratorConfig& config, std::string run_nonce)
      : config_(config), run_nonce_(std::move(run_nonce)) {}

  const std::string& run_nonce() const { return run_nonce_; }

  // Once the records and the plan are fixed: the data every checkpoint is bound to and the
  // public settings of the generator artefact.
  void Bind(std::string data_digest, v1::GeneratorHeader generator_header);
  // Resuming: the checkpoint's round and payload, refused unless it is this run's, on
  // this data, at a round in [0, total_rounds].
  struct Restored {
    int64_t round = 0;
    std::string payload;
  };
  absl::StatusOr<Restored> Read(int64_t total_rounds);
  // Starting afresh: creates the directory and writes round 0's state.
  absl::Status WriteFirst(const SavedState& state);

  // Whether the state after round `next_round` - 1 is written (checkpoint_every, the last).
  bool Due(int64_t next_round, int64_t total_rounds) const;
  // Writes the state after round `next_round` - 1 now.
  absl::Status Write(int64_t next_round, const SavedState& state);
  // Off the rounds' critical path: after the previous job, `save` serializes the state
  // after round `next_round` - 1 on a helper thread, which writes it when `due`; the
  // bytes are kept for a write at shutdown. `save` may read what the caller does not
  // touch again before Await().
  absl::Status WriteInBackground(int64_t next_round, bool due,
                                 std::function<absl::StatusOr<SavedState>()> save);
  // Waits for the write in flight.
  absl::Status Await();
  // On a failed run's way out: the last completed round's state if it is newer than the
  // durable one.
  void WriteAtShutdown();

  int64_t durable_round() const { return durable_round_.load(); }

 private:
  const v1::CuratorConfig& config_;
  const std::string run_nonce_;
  std::string data_digest_;
  v1::GeneratorHeader generator_header_;
  std::atomic<int64_t> durable_round_{0};
  // The last completed round's bytes; written by the job alone until it is awaited.
  std::shared_ptr<const SavedState> snapshot_;
  int64_t snapshot_round_ = -1;
  BackgroundTask writer_;  // declared last: joined first
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_RUN_CHECKPOINTS_H_
