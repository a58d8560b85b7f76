#include "common/nn/wire_tensor.h"

#include "common/protocol/tensor_codec.h"

namespace vfsynth {

void ToWire(const torch::Tensor& tensor, v1::Tensor* out) {
  const torch::Tensor contiguous = tensor.detach().to(torch::kFloat32).contiguous();
  EncodeTensor(contiguous.data_ptr<float>(), contiguous.sizes().vec(), out);
}

torch::Tensor FromWire(const v1::Tensor& tensor) {
  const std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  torch::Tensor out = torch::empty(shape, torch::kFloat32);
  DecodeTensorInto(tensor, out.data_ptr<float>());
  return out;
}

}  // namespace vfsynth
