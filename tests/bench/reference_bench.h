#ifndef VFSYNTH_TESTS_BENCH_REFERENCE_BENCH_H_
#define VFSYNTH_TESTS_BENCH_REFERENCE_BENCH_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth::bench {

struct ReferenceTiming {
  int threads = 0;                   // LibTorch intra-op threads used
  std::vector<double> critic_ms;     // one entry per timed critic step
  std::vector<double> generator_ms;  // one entry per timed generator step
};

// Times the single-process reference trainer (ReferenceTrainer::CriticStep and
// GeneratorStep, the in-process limit of the same math): one untimed warm-up round,
// then whole rounds until `budget` has passed and at least `min_rounds` were timed
// (at most config.training().rounds() - 1).
absl::StatusOr<ReferenceTiming> TimeReference(const v1::LocalRunConfig& config,
                                              absl::Duration budget, int min_rounds);

// Sets LibTorch's intra-op thread count of this process (the in-process curator's).
void SetTorchThreads(int threads);

}  // namespace vfsynth::bench

#endif  // VFSYNTH_TESTS_BENCH_REFERENCE_BENCH_H_
