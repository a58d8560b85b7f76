#ifndef VFSYNTH_COMMON_NN_GENERATOR_AVERAGE_H_
#define VFSYNTH_COMMON_NN_GENERATOR_AVERAGE_H_

#include <torch/torch.h>

#include <cstdint>

#include "common/nn/networks.h"

namespace vfsynth {

// Exponential moving average of G's weights and BatchNorm statistics over its
// training steps (Polyak averaging; Yazici et al. 2019). GAN iterates oscillate, so
// the last one is a noisy pick; the average is a smoother one chosen without looking
// at any data, i.e. post-processing that costs no privacy. The effective decay at
// update n is min(decay, (1 + n) / (10 + n)) so early averages are not dominated by
// the random initialisation.
class GeneratorAverage {
 public:
  // `average` must have `source`'s architecture; it starts as a copy of `source`.
  GeneratorAverage(Generator average, const Generator& source, double decay);

  // Folds `source`'s current weights in; call after every generator step.
  void Update(const Generator& source);

  Generator& average() { return average_; }
  int64_t updates() const { return updates_; }
  void set_updates(int64_t updates) { updates_ = updates; }

 private:
  Generator average_;
  double decay_;
  int64_t updates_ = 0;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_GENERATOR_AVERAGE_H_
