#ifndef VFSYNTH_COMMON_MARGINALS_MARGINAL_FIT_H_
#define VFSYNTH_COMMON_MARGINALS_MARGINAL_FIT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "common/gan/marginal_target.h"
#include "common/nn/networks.h"

namespace vfsynth::marginals {

struct FitOptions {
  int64_t steps = 0;
  int64_t batch_size = 0;
  double learning_rate = 0;
  double reverse_weight = 0;  // MarginalTarget::Loss's
  std::string stream_key;     // the public key of the z and Gumbel streams (CuratorStreamKey)
};

struct FitProgress {
  int64_t step = 0;  // steps done
  int64_t steps = 0;
  double loss = 0;
};

// Fits G to the released histograms alone: each step draws a batch of G's relaxed rows
// and takes an Adam step on target.Loss. Post-processing of the releases, so it costs no
// ε however long it runs. Steps from `first_step` on (a resumed fit continues its streams);
// `progress` (if set) after every `log_every` steps and the last.
absl::Status FitGenerator(Generator& generator, torch::optim::Adam& optimizer,
                          const MarginalTarget& target, const FitOptions& options,
                          int64_t first_step, int64_t log_every,
                          const std::function<void(const FitProgress&)>& progress);

}  // namespace vfsynth::marginals

#endif  // VFSYNTH_COMMON_MARGINALS_MARGINAL_FIT_H_
