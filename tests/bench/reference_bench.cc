#include "tests/bench/reference_bench.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/gan/reference_trainer.h"

namespace vfsynth::bench {

absl::StatusOr<ReferenceTiming> TimeReference(const v1::LocalRunConfig& config,
                                              absl::Duration budget, int min_rounds) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReferenceTrainer> trainer, ReferenceTrainer::Create(config));
  const int n_critic = config.training().n_critic();
  ReferenceTiming timing;
  timing.threads = config.training().threads();
  try {
    trainer->generator()->train();
    const absl::Time start = absl::Now();
    for (int round = 0; round < config.training().rounds(); ++round) {
      const bool timed = round > 0;  // round 0 warms up allocators and caches
      if (timed && round - 1 >= min_rounds && absl::Now() - start > budget) break;
      for (int c = 0; c < n_critic; ++c) {
        const absl::Time t0 = absl::Now();
        trainer->CriticStep(static_cast<int64_t>(round) * n_critic + c);
        if (timed) timing.critic_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
      }
      const absl::Time t0 = absl::Now();
      trainer->GeneratorStep(round);
      if (timed) timing.generator_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("reference trainer: ", e.what_without_backtrace()));
  }
  if (timing.generator_ms.empty())
    return absl::InvalidArgumentError("the reference run needs 2+ rounds");
  return timing;
}

void SetTorchThreads(int threads) { torch::set_num_threads(threads); }

}  // namespace vfsynth::bench
