#include "common/federated/dp_fedavg.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/privacy/dp_sgd.h"
#include "common/privacy/random_tensors.h"

namespace vfsynth {

absl::StatusOr<torch::Tensor> NoisedClippedSum(const std::vector<torch::Tensor>& updates, int64_t dim, double clip_norm,
                                               double noise_multiplier, SecureRandom& noise) {
  if (!(clip_norm > 0) || !std::isfinite(clip_norm)) {
    return absl::InvalidArgumentError(absl::StrCat("the clipping norm must be finite and > 0, got ", clip_norm));
  }
  if (!(noise_multiplier >= 0) || !std::isfinite(noise_multiplier)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the noise multiplier must be finite and >= 0, got ", noise_multiplier));
  }
  for (const torch::Tensor& update : updates) {
    if (update.dim() != 1 || update.size(0) != dim) {
      return absl::InvalidArgumentError(absl::StrCat("a user update of ", update.numel(), " values in ", update.dim(),
                                                     " dimensions for a model of ", dim, " parameters"));
    }
  }
  torch::Tensor sum = torch::zeros({dim}, torch::kDouble);
  if (!updates.empty()) {
    ASSIGN_OR_RETURN(const ClippedSum clipped, ClipAndSum({torch::stack(updates).to(torch::kDouble)}, clip_norm));
    sum = clipped.sum.front();
  }
  if (noise_multiplier > 0) sum += GaussianTensor(noise, {dim}, noise_multiplier * clip_norm);
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
