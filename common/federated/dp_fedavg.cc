#include "common/federated/dp_fedavg.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/dp/dp_sgd.h"
#include "common/random/random_tensors.h"

namespace vfsynth {

absl::StatusOr<torch::Tensor> NoisedClippedSum(const std::vector<torch::Tensor>& updates,
                                               int64_t dim, double clip_norm,
                                               double noise_multiplier, SecureRandom& noise) {
  ClippedSumAccumulator sum(dim, clip_norm);
  for (const torch::Tensor& update : updates) {
    if (update.dim() != 1 || update.size(0) != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("a user update of ", update.numel(), " values in ", update.dim(),
                       " dimensions for a model of ", dim, " parameters"));
    }
  }
  if (!updates.empty()) RETURN_IF_ERROR(sum.Add(torch::stack(updates)));
  return sum.Noised(noise_multiplier, noise);
}

ClippedSumAccumulator::ClippedSumAccumulator(int64_t dim, double clip_norm)
    : dim_(dim), clip_norm_(clip_norm), sum_(torch::zeros({dim}, torch::kDouble)) {}

absl::Status ClippedSumAccumulator::Add(const torch::Tensor& updates) {
  if (updates.dim() != 2 || updates.size(1) != dim_) {
    return absl::InvalidArgumentError(
        absl::StrCat("updates of ", updates.numel(), " values in ", updates.dim(),
                     " dimensions for a model of ", dim_, " parameters"));
  }
  if (updates.size(0) == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(const ClippedSum clipped, ClipAndSum({updates.to(torch::kDouble)}, clip_norm_));
  sum_ += clipped.sum.front();
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> ClippedSumAccumulator::Noised(double noise_multiplier,
                                                            SecureRandom& noise) const {
  if (!(clip_norm_ > 0) || !std::isfinite(clip_norm_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the clipping norm must be finite and > 0, got ", clip_norm_));
  }
  if (!(noise_multiplier >= 0) || !std::isfinite(noise_multiplier)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the noise multiplier must be finite and >= 0, got ", noise_multiplier));
  }
  torch::Tensor sum = sum_.clone();
  if (noise_multiplier > 0)
    sum += GaussianTensor(noise, {dim_}, noise_multiplier * DpFedAvgSensitivity(clip_norm_));
  return sum.to(torch::kFloat32);
}

double DpFedAvgSensitivity(double clip_norm) { return 2 * clip_norm; }

absl::StatusOr<torch::Tensor> FedAvgAverage(const std::vector<torch::Tensor>& released_sums,
                                            int64_t users_asked) {
  if (released_sums.empty()) return absl::InvalidArgumentError("no party released a sum");
  if (users_asked < 1)
    return absl::InvalidArgumentError(absl::StrCat("a round asks for ", users_asked, " users"));
  torch::Tensor total = torch::zeros_like(released_sums.front());
  for (const torch::Tensor& sum : released_sums) {
    if (!sum.sizes().equals(total.sizes())) {
      return absl::InvalidArgumentError("the parties' released sums have different shapes");
    }
    total += sum;
  }
  return total / static_cast<double>(users_asked);
}

namespace {
constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.99;
constexpr double kEpsilon = 1e-8;
}  // namespace

FedAdam::FedAdam(int64_t dim, double learning_rate)
    : dim_(dim),
      learning_rate_(learning_rate),
      state_{torch::zeros({dim}, torch::kFloat32), torch::zeros({dim}, torch::kFloat32), 0} {}

void FedAdam::Step(const torch::Tensor& average, torch::Tensor& flat) {
  state_.steps += 1;
  state_.first_moment.mul_(kBeta1).add_(average, 1 - kBeta1);
  state_.second_moment.mul_(kBeta2).addcmul_(average, average, 1 - kBeta2);
  const double first_correction = 1 - std::pow(kBeta1, static_cast<double>(state_.steps));
  const double second_correction = 1 - std::pow(kBeta2, static_cast<double>(state_.steps));
  const torch::Tensor denominator =
      (state_.second_moment / second_correction).sqrt_().add_(kEpsilon);
  flat.addcdiv_(state_.first_moment, denominator, learning_rate_ / first_correction);
}

absl::Status FedAdam::Restore(State state) {
  for (const torch::Tensor* moment : {&state.first_moment, &state.second_moment}) {
    if (!moment->defined() || moment->dim() != 1 || moment->numel() != dim_ ||
        moment->scalar_type() != torch::kFloat32 || !torch::isfinite(*moment).all().item<bool>()) {
      return absl::InvalidArgumentError(
          absl::StrCat("an Adam moment must be ", dim_, " finite float32 values"));
    }
  }
  if ((state.second_moment < 0).any().item<bool>() || state.steps < 0) {
    return absl::InvalidArgumentError(
        "an Adam state needs a non-negative second moment and step count");
  }
  state_ = std::move(state);
  return absl::OkStatus();
}

}  // namespace vfsynth
