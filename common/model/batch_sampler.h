#ifndef VFSYNTH_COMMON_MODEL_BATCH_SAMPLER_H_
#define VFSYNTH_COMMON_MODEL_BATCH_SAMPLER_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace vfsynth {

// `batch` distinct row indices out of [0, rows), uniformly and without replacement
// (every ordered batch equally likely): the first `batch` positions of a Fisher-Yates
// shuffle, drawn from `gen`. The privacy accounting assumes exactly this sampling
// (docs/privacy.md). It costs O(batch), not O(rows) like torch::randperm, which
// the parties called on every critic step (Adult: 26,048 rows for a batch of 64).
// Requires 0 <= batch <= rows. Returns an int64 tensor of shape [batch].
torch::Tensor SampleWithoutReplacement(int64_t rows, int64_t batch, at::Generator gen);

// The real rows of critic step `step`: every party and the reference trainer draw them
// with this call from the parties' shared sampling secret, so they agree on the batch.
torch::Tensor RealBatchIndices(const std::string& sampling_secret, int64_t rows, int64_t batch,
                               int64_t step);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_MODEL_BATCH_SAMPLER_H_
