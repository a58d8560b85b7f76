#include "common/nn/generator_average.h"

#include <algorithm>

namespace vfsynth {
namespace {

std::vector<torch::Tensor> State(const Generator& generator) {
  std::vector<torch::Tensor> tensors = generator->parameters();
  for (const auto& buffer : generator->buffers()) tensors.push_back(buffer);
  return tensors;
}

}  // namespace

GeneratorAverage::GeneratorAverage(Generator average, const Generator& source, double decay)
    : average_(std::move(average)), decay_(decay) {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> from = State(source);
  std::vector<torch::Tensor> to = State(average_);
  TORCH_CHECK(from.size() == to.size(), "generator average: architectures differ");
  for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
}

void GeneratorAverage::Update(const Generator& source) {
  torch::NoGradGuard no_grad;
  const double n = static_cast<double>(updates_);
  const double decay = std::min(decay_, (1.0 + n) / (10.0 + n));
  const std::vector<torch::Tensor> from = State(source);
  std::vector<torch::Tensor> to = State(average_);
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i].is_floating_point()) {
      to[i].mul_(decay).add_(from[i], 1.0 - decay);
    } else {
      to[i].copy_(from[i]);  // counters such as BatchNorm's num_batches_tracked
    }
  }
  ++updates_;
}

}  // namespace vfsynth
