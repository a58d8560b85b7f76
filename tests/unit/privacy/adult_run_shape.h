#ifndef VFSYNTH_TESTS_UNIT_PRIVACY_ADULT_RUN_SHAPE_H_
#define VFSYNTH_TESTS_UNIT_PRIVACY_ADULT_RUN_SHAPE_H_

#include <cstdint>

#include "common/privacy/run_accounting.h"

namespace vfsynth::privacy {

// Adult's training split (26,048 records: the 80% of docs/results.md) at B = 256,
// one critic step per round, no marginal release and an even dpsgd split.
inline RunShape AdultRunShape(int parties, int64_t critic_steps) {
  RunShape shape;
  shape.parties = parties;
  shape.records = 26048;
  shape.batch_size = 256;
  shape.n_critic = 1;
  shape.critic_steps = critic_steps;
  return shape;
}

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_TESTS_UNIT_PRIVACY_ADULT_RUN_SHAPE_H_
