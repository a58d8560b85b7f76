#include "server/core/run_checkpoints.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/checkpoint_file.h"
#include "server/core/curator_checkpoint.h"
#include "server/core/generator_artefact.h"

namespace vfsynth {

void RunCheckpoints::Bind(std::string data_digest, v1::GeneratorHeader generator_header) {
  data_digest_ = std::move(data_digest);
  generator_header_ = std::move(generator_header);
}

absl::StatusOr<RunCheckpoints::Restored> RunCheckpoints::Read(int64_t total_rounds) {
  const std::string path = CuratorCheckpointPath(config_);
  ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpoint(path));
  RETURN_IF_ERROR(CheckCuratorCheckpointHeader(checkpoint.header, config_, run_nonce_, data_digest_, path));
  const int64_t round = checkpoint.header.round();
  if (round < 0 || round > total_rounds) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint ", path, " is at round ", round,
                                                      ", outside this run's ", total_rounds,
                                                      " rounds"));
  }
  durable_round_ = round;
  spdlog::info("resumed run '{}' at round {} from {}", config_.run_id(), round, path);
  return Restored{round, std::move(checkpoint.payload)};
}

absl::Status RunCheckpoints::WriteFirst(const SavedState& state) {
  RETURN_IF_ERROR(MakeDirectories(config_.checkpoint_dir()));
  return Write(0, state);
}

bool RunCheckpoints::Due(int64_t next_round, int64_t total_rounds) const {
  return next_round % config_.checkpoint_every() == 0 || next_round == total_rounds;
}

absl::Status RunCheckpoints::Write(int64_t next_round, const SavedState& state) {
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(WriteCheckpoint(CuratorCheckpointPath(config_),
                                  CuratorCheckpointHeader(config_, run_nonce_, data_digest_, next_round),
                                  state.checkpoint));
  GeneratorArtefact artefact{generator_header_, state.generator};
  artefact.header.set_round(next_round);
  RETURN_IF_ERROR(WriteGeneratorArtefact(GeneratorArtefactPath(config_), artefact));
  spdlog::debug("checkpoint of round {}: {} bytes and the generator's {} in {:.1f} ms", next_round,
                state.checkpoint.size(), state.generator.size(),
                absl::ToDoubleMilliseconds(absl::Now() - start));
  // Only now may parties forget their replies for the rounds before it.
  durable_round_ = next_round;
  return absl::OkStatus();
}

absl::Status RunCheckpoints::WriteInBackground(int64_t next_round, bool due,
                                               std::function<absl::StatusOr<SavedState>()> save) {
  RETURN_IF_ERROR(writer_.Await());
  return writer_.Start([this, next_round, due, save = std::move(save)]() -> absl::Status {
    ASSIGN_OR_RETURN(SavedState state, save());
    snapshot_ = std::make_shared<const SavedState>(std::move(state));
    snapshot_round_ = next_round;
    return due ? Write(next_round, *snapshot_) : absl::OkStatus();
  });
}

absl::Status RunCheckpoints::Await() { return writer_.Await(); }

void RunCheckpoints::WriteAtShutdown() {
  if (const absl::Status status = writer_.Await(); !status.ok()) {
    spdlog::error("writing a checkpoint failed: {}", status.ToString());
  }
  if (snapshot_ == nullptr || snapshot_round_ <= durable_round_) return;
  const absl::Status status = Write(snapshot_round_, *snapshot_);
  if (status.ok()) {
    spdlog::info("checkpoint at round {} written on the way out", snapshot_round_);
  } else {
    spdlog::error("could not write the checkpoint of round {}: {}", snapshot_round_,
                  status.ToString());
  }
}

}  // namespace vfsynth
