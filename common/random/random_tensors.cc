#include "common/random/random_tensors.h"

#include <cmath>
#include <numeric>

#include "absl/container/flat_hash_map.h"

namespace vfsynth {

namespace {

// `n` uniforms in (0, 1) with 53 random bits each, (k + 0.5) / 2^53, as in
// SecureRandom::Uniform, but converted in bulk: the keystream fills the tensor's memory
// directly and the conversion is vectorised.
torch::Tensor UniformDoubles(SecureRandom& rng, int64_t n) {
  torch::Tensor bits = torch::empty({n}, torch::kLong);
  rng.Fill(reinterpret_cast<unsigned char*>(bits.data_ptr<int64_t>()),
           static_cast<size_t>(n) * sizeof(int64_t));
  // The top 53 bits of each word (the shift is arithmetic on int64, so mask).
  const torch::Tensor top = bits.bitwise_right_shift(11).bitwise_and((int64_t{1} << 53) - 1);
  return (top.to(torch::kDouble) + 0.5) * 0x1.0p-53;
}

}  // namespace

torch::Tensor GaussianTensor(SecureRandom& rng, at::IntArrayRef sizes, double stddev,
                             torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  const int64_t n = c10::multiply_integers(sizes);
  const int64_t pairs = (n + 1) / 2;
  // Box-Muller on pairs of uniforms, in double, vectorised: one pair gives two normals.
  const torch::Tensor u = UniformDoubles(rng, 2 * pairs);
  const torch::Tensor radius = (-2.0 * u.narrow(0, 0, pairs).log()).sqrt() * stddev;
  const torch::Tensor angle = u.narrow(0, pairs, pairs) * (2.0 * M_PI);
  const torch::Tensor out =
      torch::cat({radius * angle.cos(), radius * angle.sin()}).narrow(0, 0, n).reshape(sizes);
  return dtype == torch::kDouble ? out : out.to(dtype);
}

torch::Tensor UniformTensor(SecureRandom& rng, at::IntArrayRef sizes, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  const torch::Tensor out = UniformDoubles(rng, c10::multiply_integers(sizes)).reshape(sizes);
  return dtype == torch::kDouble ? out : out.to(dtype);
}

torch::Tensor UniformIntegers(SecureRandom& rng, int64_t low, int64_t high, int64_t count) {
  TORCH_CHECK(high > low && count >= 0, "uniform integers need high > low and count >= 0");
  torch::Tensor out = torch::empty({count}, torch::kLong);
  int64_t* values = out.data_ptr<int64_t>();
  const uint64_t range = static_cast<uint64_t>(high - low);
  for (int64_t i = 0; i < count; ++i)
    values[i] = low + static_cast<int64_t>(rng.UniformBelow(range));
  return out;
}

torch::Tensor RandomPermutation(SecureRandom& rng, int64_t n) {
  TORCH_CHECK(n >= 0, "a permutation needs n >= 0");
  torch::Tensor out = torch::arange(n, torch::kLong);
  int64_t* values = out.data_ptr<int64_t>();
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(values[i], values[rng.UniformBelow(static_cast<uint64_t>(i + 1))]);
  }
  return out;
}

torch::Tensor SampleWithoutReplacement(int64_t rows, int64_t batch, SecureRandom& rng) {
  TORCH_CHECK(batch >= 0 && batch <= rows, "cannot draw ", batch, " distinct rows out of ", rows);
  torch::Tensor out = torch::empty({batch}, torch::kLong);
  int64_t* indices = out.data_ptr<int64_t>();
  // The shuffled array is the identity except where a swap wrote: keep only those.
  absl::flat_hash_map<int64_t, int64_t> moved;
  moved.reserve(static_cast<size_t>(batch));
  auto value_at = [&moved](int64_t i) {
    auto it = moved.find(i);
    return it == moved.end() ? i : it->second;
  };
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t j = i + static_cast<int64_t>(rng.UniformBelow(static_cast<uint64_t>(rows - i)));
    const int64_t picked = value_at(j);
    moved[j] = value_at(i);
    indices[i] = picked;
  }
  return out;
}

}  // namespace vfsynth
