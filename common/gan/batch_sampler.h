#ifndef VFSYNTH_COMMON_GAN_BATCH_SAMPLER_H_
#define VFSYNTH_COMMON_GAN_BATCH_SAMPLER_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace vfsynth {

// The real rows of critic step `step`: `batch` distinct indices of [0, rows), uniformly
// without replacement (the sampling the privacy accounting assumes, docs/privacy.md),
// from the ChaCha20 stream keyed by the whole HMAC of the parties' shared sampling
// secret. Every party and the reference trainer draw them with this call, so they agree
// on the batch; the curator, without the secret, cannot predict it.
torch::Tensor RealBatchIndices(const std::string& sampling_secret, int64_t rows, int64_t batch,
                               int64_t step);

// `party`'s local gradient-penalty weights of critic step `step`: [rows, 1] uniforms in
// (0, 1), float32, from the same secret's stream for (party, step). The party and the
// reference trainer draw them with this call.
torch::Tensor LocalGpAlphas(const std::string& sampling_secret, const std::string& party,
                            int64_t rows, int64_t step);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_BATCH_SAMPLER_H_
