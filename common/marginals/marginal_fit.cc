#include "common/marginals/marginal_fit.h"

#include "absl/strings/str_cat.h"
#include "common/gan/stream_purposes.h"
#include "common/nn/torch_boundary.h"

namespace vfsynth::marginals {

absl::Status FitGenerator(Generator& generator, torch::optim::Adam& optimizer,
                          const MarginalTarget& target, const FitOptions& options,
                          int64_t first_step, int64_t log_every,
                          const std::function<void(const FitProgress&)>& progress) {
  if (options.steps < 0 || options.batch_size < 1 || !(options.learning_rate > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a marginal fit needs steps >= 0, batch_size >= 1 and a learning rate > 0; got ",
        options.steps, ", ", options.batch_size, ", ", options.learning_rate));
  }
  return CatchLibTorch([&]() -> absl::Status {
    generator->train();
    for (int64_t step = first_step; step < options.steps; ++step) {
      const torch::Tensor z = generator->SampleLatent(
          options.batch_size, StreamGenerator(options.stream_key, streams::kGeneratorZ, step));
      const torch::Tensor rows = generator->forward(
          z, StreamGenerator(options.stream_key, streams::kGeneratorGumbel, step));
      const torch::Tensor loss = target.Loss(rows, options.reverse_weight);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      const bool last = step + 1 == options.steps;
      if (progress && (last || (log_every > 0 && (step + 1) % log_every == 0))) {
        progress({step + 1, options.steps, loss.item<double>()});
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace vfsynth::marginals
