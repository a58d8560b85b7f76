#ifndef VFSYNTH_COMMON_NN_WIRE_TENSOR_H_
#define VFSYNTH_COMMON_NN_WIRE_TENSOR_H_

#include <torch/torch.h>

#include "vfsynth/v1/tensor.pb.h"

namespace vfsynth {

// LibTorch <-> wire tensors (common/protocol/tensor_codec.h). FromWire expects a tensor
// that already passed ValidateTensor.
void ToWire(const torch::Tensor& tensor, v1::Tensor* out);
torch::Tensor FromWire(const v1::Tensor& tensor);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_NN_WIRE_TENSOR_H_
