#ifndef VFSYNTH_COMMON_CHECKPOINT_MODEL_STATE_H_
#define VFSYNTH_COMMON_CHECKPOINT_MODEL_STATE_H_

// The trainable state of the two model halves as bytes (a LibTorch archive), for
// checkpoints: every parameter and buffer, every optimiser's state (Adam moments and
// step counts). Restoring is bit-exact: training continues exactly as it would have
// without the checkpoint, but for a party's DP noise.
//
// No DP noise stream or key is ever saved here: it would let whoever reads the file
// subtract the noise from every release. A party draws new keys from the OS on
// restart, which is sound because a noisy release that left is never recomputed
// (docs/operations.md, "Failure handling"); the curator's D_s noise is a function of a
// key kept apart (noise.key) and the step.

#include <torch/torch.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vfsynth {

class CuratorModel;
class GeneratorImpl;
class PartyModel;

absl::StatusOr<std::string> SaveCuratorState(CuratorModel& model);
// Makes `to` (built with the same configuration and encoders) hold what
// SaveCuratorState saves of `from`: parameters, buffers, both Adam states, the
// generator average. Tensor copies
// only: the curator snapshots a round's end with it and serializes the copy while the
// next round runs. A model of another shape is refused (INVALID_ARGUMENT).
absl::Status CopyCuratorState(CuratorModel& from, CuratorModel& to);
// `model` must be built with the same configuration and encoders; a state of another
// shape is refused (INVALID_ARGUMENT) and leaves `model` unusable.
absl::Status RestoreCuratorState(const std::string& bytes, CuratorModel& model);

// The generator synthesis publishes from (CuratorModel::published_generator) alone:
// its parameters and buffers under the one record "generator", nothing of D_s and no
// optimiser state. The payload of the publishable artefact (server/core/generator_artefact.h).
absl::StatusOr<std::string> SavePublishedGenerator(CuratorModel& model);
// `generator` must be built with the run's model settings and the parties' encoders; a
// state of another shape is refused (INVALID_ARGUMENT).
absl::Status RestorePublishedGenerator(const std::string& bytes, GeneratorImpl& generator);

// A generator fitted alone (the measured-marginals mode): its parameters and buffers and
// its Adam state; and its published form (as SavePublishedGenerator writes it).
absl::StatusOr<std::string> SaveGeneratorFit(GeneratorImpl& generator,
                                             torch::optim::Adam& optimizer);
absl::Status RestoreGeneratorFit(const std::string& bytes, GeneratorImpl& generator,
                                 torch::optim::Adam& optimizer);
absl::StatusOr<std::string> SavePublishedGenerator(GeneratorImpl& generator);

absl::StatusOr<std::string> SavePartyState(PartyModel& model);
absl::Status RestorePartyState(const std::string& bytes, PartyModel& model);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_CHECKPOINT_MODEL_STATE_H_
