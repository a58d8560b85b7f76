#ifndef VFSYNTH_COMMON_NN_WAE_SIZE_H_
#define VFSYNTH_COMMON_NN_WAE_SIZE_H_

#include <cstdint>

namespace vfsynth {

// The parameter count d of the horizontal autoencoder (wae.h) for encoded rows of
// `input_dim` columns: two linear layers each way through `hidden` to `latent`, each with
// its bias. Without LibTorch, so that a plan can be sized where no model is built.
inline int64_t WaeParameterCountOf(int64_t input_dim, int64_t hidden, int64_t latent) {
  return (input_dim * hidden + hidden) + (hidden * latent + latent) +
         (latent * hidden + hidden) + (hidden * input_dim + input_dim);
}

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_WAE_SIZE_H_
