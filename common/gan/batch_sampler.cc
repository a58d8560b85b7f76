#include "common/gan/batch_sampler.h"

#include "common/gan/stream_purposes.h"
#include "common/random/random_tensors.h"
#include "common/random/secure_random.h"

namespace vfsynth {

torch::Tensor RealBatchIndices(const std::string& sampling_secret, int64_t rows, int64_t batch,
                               int64_t step) {
  SecureRandom stream =
      SecureRandom::Derived(sampling_secret, streams::kRealBatch, static_cast<uint64_t>(step));
  return SampleWithoutReplacement(rows, batch, stream);
}

torch::Tensor LocalGpAlphas(const std::string& sampling_secret, const std::string& party,
                            int64_t rows, int64_t step) {
  SecureRandom stream = SecureRandom::Derived(sampling_secret, streams::LocalGpAlpha(party),
                                              static_cast<uint64_t>(step));
  return UniformTensor(stream, {rows, 1}, torch::kFloat32);
}

}  // namespace vfsynth
