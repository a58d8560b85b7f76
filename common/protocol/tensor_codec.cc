#include "common/protocol/tensor_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vfsynth {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "wire tensors are little-endian");

namespace {

// Index of the first NaN or infinity among `count` little-endian floats at `raw`, or
// -1. A float is non-finite iff its exponent bits are all ones; blocks are scanned
// without branches (vectorisable), and only a bad block element by element.
int64_t FirstNonFinite(const char* raw, int64_t count) {
  constexpr uint32_t kExponent = 0x7f800000u;
  constexpr int64_t kBlock = 1024;
  for (int64_t start = 0; start < count; start += kBlock) {
    const int64_t end = std::min(count, start + kBlock);
    uint32_t any = 0;
    for (int64_t i = start; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, raw + i * sizeof(float), sizeof(bits));
      any |= static_cast<uint32_t>((bits & kExponent) == kExponent);
    }
    if (any == 0) continue;
    for (int64_t i = start; i < end; ++i) {
      float value;
      std::memcpy(&value, raw + i * sizeof(float), sizeof(value));
      if (!std::isfinite(value)) return i;
    }
  }
  return -1;
}

}  // namespace

int64_t ElementCount(absl::Span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

void EncodeTensor(const float* data, absl::Span<const int64_t> shape, v1::Tensor* out) {
  out->Clear();
  for (int64_t d : shape) out->add_shape(d);
  out->set_dtype(v1::DTYPE_FLOAT32);
  out->mutable_data()->assign(reinterpret_cast<const char*>(data),
                              static_cast<size_t>(ElementCount(shape)) * sizeof(float));
}

absl::Status ValidateTensor(const v1::Tensor& tensor, absl::Span<const int64_t> expected_shape,
                            const std::string& name, int64_t max_bytes) {
  if (tensor.dtype() != v1::DTYPE_FLOAT32) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": dtype must be FLOAT32, got ", v1::DType_Name(tensor.dtype())));
  }
  const std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  if (shape != std::vector<int64_t>(expected_shape.begin(), expected_shape.end())) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": expected shape [",
                                                   absl::StrJoin(expected_shape, ", "), "], got [",
                                                   absl::StrJoin(shape, ", "), "]"));
  }
  const int64_t bytes = ElementCount(expected_shape) * static_cast<int64_t>(sizeof(float));
  if (bytes > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name, ": ", bytes, " bytes exceed the limit of ", max_bytes));
  }
  if (static_cast<int64_t>(tensor.data().size()) != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": shape needs ", bytes, " bytes of data, got ", tensor.data().size()));
  }
  if (const int64_t bad = FirstNonFinite(tensor.data().data(), ElementCount(expected_shape));
      bad >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": non-finite value at element ", bad));
  }
  return absl::OkStatus();
}

void DecodeTensorInto(const v1::Tensor& tensor, float* out) {
  std::memcpy(out, tensor.data().data(), tensor.data().size());
}

}  // namespace vfsynth
