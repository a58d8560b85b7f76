#include "common/federated/dp_fedavg.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/privacy/random_tensors.h"

namespace vfsynth {

torch::Tensor ClipToNorm(const torch::Tensor& update, double clip_norm) {
  const double norm = update.to(torch::kDouble).norm().item<double>();
  if (norm <= clip_norm) return update;
  return update * (clip_norm / norm);
}

absl::StatusOr<torch::Tensor> NoisedClippedSum(const std::vector<torch::Tensor>& updates, int64_t dim, double clip_norm,
                                               double noise_multiplier, SecureRandom& noise) {
  if (!(clip_norm > 0) || !std::isfinite(clip_norm)) {
    return absl::InvalidArgumentError(absl::StrCat("the clipping norm must be finite and > 0, got ", clip_norm));
  }
  if (!(noise_multiplier >= 0) || !std::isfinite(noise_multiplier)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the noise multiplier must be finite and >= 0, got ", noise_multiplier));
  }
  torch::Tensor sum = torch::zeros({dim}, torch::kDouble);
  for (const torch::Tensor& update : updates) {
    if (update.dim() != 1 || update.size(0) != dim) {
      return absl::InvalidArgumentError(absl::StrCat("a user update of ", update.numel(), " values in ", update.dim(),
                                                     " dimensions for a model of ", dim, " parameters"));
    }
    sum += ClipToNorm(update.to(torch::kDouble), clip_norm);
  }
  if (noise_multiplier > 0) sum += GaussianTensor(noise, {dim}, noise_multiplier * 2 * clip_norm);
  return sum.to(torch::kFloat32);
}

absl::StatusOr<torch::Tensor> FedAvgStep(const std::vector<torch::Tensor>& released_sums, int64_t users_asked,
                                         double gamma) {
  if (released_sums.empty()) return absl::InvalidArgumentError("no party released a sum");
  if (users_asked < 1) return absl::InvalidArgumentError(absl::StrCat("a round asks for ", users_asked, " users"));
  torch::Tensor total = torch::zeros_like(released_sums.front());
  for (const torch::Tensor& sum : released_sums) {
    if (!sum.sizes().equals(total.sizes())) {
      return absl::InvalidArgumentError("the parties' released sums have different shapes");
    }
    total += sum;
  }
  return total * (gamma / static_cast<double>(users_asked));
}

}  // namespace vfsynth
