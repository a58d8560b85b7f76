#ifndef VFSYNTH_COMMON_MODEL_MODEL_STATE_H_
#define VFSYNTH_COMMON_MODEL_MODEL_STATE_H_

// The trainable state of the two model halves as bytes (a LibTorch archive), for
// checkpoints: every parameter and buffer (BatchNorm running statistics), every
// optimiser's state (Adam moments and step counts) and, for the curator's DP-SGD of
// D_s, its noise generator's state. Restoring is bit-exact: training continues
// exactly as it would have without the checkpoint.
//
// A party's DP noise generator is deliberately NOT saved: its state would let whoever
// reads the file subtract the noise from every release. It is reseeded from the OS
// on restart, which is sound because a party never recomputes a noisy release that
// left (docs/operations.md, "Failure handling").

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vfsynth {

class CuratorModel;
class PartyModel;

absl::StatusOr<std::string> SaveCuratorState(CuratorModel& model);
// Makes `to` (built with the same configuration and encoders, and in dpsgd given a noise
// generator of its own) hold what SaveCuratorState saves of `from`: parameters, buffers,
// both Adam states, D_s's noise-generator state, the generator average. Tensor copies
// only: the curator snapshots a round's end with it and serializes the copy while the
// next round runs. A model of another shape is refused (INVALID_ARGUMENT).
absl::Status CopyCuratorState(CuratorModel& from, CuratorModel& to);
// `model` must be built with the same configuration and encoders; a state of another
// shape is refused (INVALID_ARGUMENT) and leaves `model` unusable.
absl::Status RestoreCuratorState(const std::string& bytes, CuratorModel& model);

absl::StatusOr<std::string> SavePartyState(PartyModel& model);
absl::Status RestorePartyState(const std::string& bytes, PartyModel& model);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_MODEL_MODEL_STATE_H_
