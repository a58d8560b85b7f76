// libFuzzer target: a Tensor as it arrives from a peer (serialized proto bytes),
// validated against the shape the protocol expects and decoded. Whatever the bytes,
// ValidateTensor must either reject them or accept a tensor whose decoding fills
// exactly the expected elements with finite floats, and re-encoding gives the
// same bytes back.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/protocol/tensor_codec.h"
#include "vfsynth/v1/tensor.pb.h"

namespace {

// Shapes the protocol expects (B x d), chosen by the first input byte.
constexpr int64_t kShapes[][2] = {{1, 1}, {2, 3}, {4, 2}, {8, 8}, {3, 0}, {0, 5}, {16, 4}, {5, 7}};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto& shape = kShapes[data[0] % (sizeof(kShapes) / sizeof(kShapes[0]))];
  const int64_t max_bytes = (data[1] % 2 == 0) ? 1 << 20 : 64;  // sometimes a tight limit
  vfsynth::v1::Tensor tensor;
  if (!tensor.ParseFromArray(data + 2, static_cast<int>(size - 2))) return 0;
  const std::vector<int64_t> expected = {shape[0], shape[1]};
  if (!vfsynth::ValidateTensor(tensor, expected, "fuzz", max_bytes).ok()) return 0;

  const int64_t count = vfsynth::ElementCount(expected);
  if (count * static_cast<int64_t>(sizeof(float)) > max_bytes) std::abort();  // limit ignored
  // Canaries on both sides catch a decode that writes outside count floats.
  std::vector<float> out(static_cast<size_t>(count) + 2, 7.0f);
  vfsynth::DecodeTensorInto(tensor, out.data() + 1);
  if (out.front() != 7.0f || out.back() != 7.0f) std::abort();
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(out[static_cast<size_t>(i) + 1])) std::abort();  // non-finite accepted
  }
  vfsynth::v1::Tensor again;
  vfsynth::EncodeTensor(out.data() + 1, expected, &again);
  if (again.data() != tensor.data()) std::abort();
  return 0;
}
