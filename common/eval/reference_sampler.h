#ifndef VFSYNTH_COMMON_EVAL_REFERENCE_SAMPLER_H_
#define VFSYNTH_COMMON_EVAL_REFERENCE_SAMPLER_H_

#include <cstdint>
#include <string>

#include "common/eval/membership_audit.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

struct ShadowTrainingOptions {
  v1::ModelConfig model;        // resolved with defaults; see SmallShadowConfig()
  v1::TrainingConfig training;  // seed is overridden per shadow model
  v1::PartiesFile parties;      // no parties: one party holds every column
  std::string work_dir;         // scratch space for the party files
  int64_t synthetic_rows = 0;   // 0: as many as training rows
};

// Small networks and short training so that 2M shadow models fit on 2 cores.
ShadowTrainingOptions SmallShadowConfig(int rounds);

// A SyntheticSampler that splits the table into party files and runs the
// single-process ReferenceTrainer (the distributed system's reference) on them.
SyntheticSampler MakeReferenceTrainerSampler(const v1::Schema& schema,
                                             ShadowTrainingOptions options);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_REFERENCE_SAMPLER_H_
