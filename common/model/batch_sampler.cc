#include "common/model/batch_sampler.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "common/model/networks.h"
#include "common/model/stream_purposes.h"

namespace vfsynth {
namespace {

// Uniform in [0, n) without modulo bias: 64-bit draws below 2^64 mod n are rejected.
uint64_t UniformBelow(uint64_t n, at::CPUGeneratorImpl* gen) {
  const uint64_t threshold = (0 - n) % n;  // (2^64 - n) mod n
  while (true) {
    const uint64_t draw = gen->random64();
    if (draw >= threshold) return draw % n;
  }
}

}  // namespace

torch::Tensor SampleWithoutReplacement(int64_t rows, int64_t batch, at::Generator gen) {
  TORCH_CHECK(batch >= 0 && batch <= rows, "cannot draw ", batch, " distinct rows out of ", rows);
  torch::Tensor out = torch::empty({batch}, torch::kLong);
  int64_t* indices = out.data_ptr<int64_t>();
  // The shuffled array is the identity except where a swap wrote: keep only those.
  absl::flat_hash_map<int64_t, int64_t> moved;
  moved.reserve(static_cast<size_t>(batch));  // one key written per position drawn
  auto value_at = [&moved](int64_t i) {
    auto it = moved.find(i);
    return it == moved.end() ? i : it->second;
  };
  auto* cpu = at::check_generator<at::CPUGeneratorImpl>(gen);
  std::lock_guard<std::mutex> lock(gen.mutex());
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t j = i + static_cast<int64_t>(UniformBelow(static_cast<uint64_t>(rows - i), cpu));
    const int64_t picked = value_at(j);
    moved[j] = value_at(i);
    indices[i] = picked;
  }
  return out;
}

torch::Tensor RealBatchIndices(const std::string& sampling_secret, int64_t rows, int64_t batch,
                               int64_t step) {
  const uint64_t counter = static_cast<uint64_t>(step);
  return SampleWithoutReplacement(rows, batch, StreamGenerator(sampling_secret, streams::kRealBatch, counter));
}

}  // namespace vfsynth
