#ifndef VFSYNTH_COMMON_PROTOCOL_TENSOR_CODEC_H_
#define VFSYNTH_COMMON_PROTOCOL_TENSOR_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "vfsynth/v1/tensor.pb.h"

namespace vfsynth {

// Wire format of tensors: shape + dtype + little-endian row-major float32 bytes.
// (Every supported platform is little-endian; a static_assert in the .cc checks.)

// Fills `out` with a copy of `count(shape)` floats from `data`.
void EncodeTensor(const float* data, absl::Span<const int64_t> shape, v1::Tensor* out);

// Checks a received tensor against what the protocol expects at this point: dtype,
// exact shape, byte length, size limit and finiteness. `name` appears in errors
// ("features.h_real: expected shape [256, 64], got [256, 32]").
absl::Status ValidateTensor(const v1::Tensor& tensor, absl::Span<const int64_t> expected_shape,
                            const std::string& name, int64_t max_bytes);

// Copies a tensor that passed ValidateTensor into `out` (count(shape) floats).
void DecodeTensorInto(const v1::Tensor& tensor, float* out);

int64_t ElementCount(absl::Span<const int64_t> shape);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PROTOCOL_TENSOR_CODEC_H_
