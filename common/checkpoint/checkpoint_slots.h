#ifndef VFSYNTH_COMMON_CHECKPOINT_CHECKPOINT_SLOTS_H_
#define VFSYNTH_COMMON_CHECKPOINT_CHECKPOINT_SLOTS_H_

// A checkpoint rewritten very often (a party's critic state after every critic
// update), kept in two slot files `<path>.0` and `<path>.1` that are overwritten in
// place, alternately. Each write is one pwrite and one fdatasync of a file whose blocks
// already exist: no temp file, rename or directory fsync (and so no file-system journal
// commit), which the atomic WriteCheckpoint needs on every write.
//
// Crash consistency: a write only ever overwrites the slot that does not hold the
// newest valid checkpoint. A slot is valid when its framing, a SHA-256 of its header
// and the header's payload SHA-256 all check out; a torn or damaged slot fails them
// and the reader takes the other one. So a crash at any moment leaves the previous or
// the new checkpoint readable, as with WriteCheckpoint.
//
// Not thread-safe; one writer per path.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/checkpoint/checkpoint_file.h"
#include "vfsynth/v1/checkpoint.pb.h"

namespace vfsynth {

class CheckpointSlots {
 public:
  explicit CheckpointSlots(std::string path) : path_(std::move(path)) {}

  // The valid slot whose header has the highest step (then round). NOT_FOUND if no
  // slot file exists; DATA_LOSS (naming both slots) if none is valid;
  // FAILED_PRECONDITION for a format version this build does not read.
  absl::StatusOr<Checkpoint> Read();
  // After a Read that found a valid slot: why the other slot was not read ("" if it is
  // valid or absent). A write torn by a crash leaves this; so does a damaged disk, and
  // then the state read is older than what the party last committed.
  const std::string& damaged() const { return damaged_; }

  // Sets header.format_version and header.payload_sha256 and writes the slot that
  // does not hold the newest valid checkpoint; durable when it returns OK.
  absl::Status Write(v1::CheckpointHeader header, absl::string_view payload);

  // Whether either slot file exists (valid or not).
  bool Exists() const;

  std::string SlotPath(int slot) const;

 private:
  std::string path_;
  int next_slot_ = -1;  // the slot to overwrite next; -1 until known
  std::string damaged_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_CHECKPOINT_CHECKPOINT_SLOTS_H_
