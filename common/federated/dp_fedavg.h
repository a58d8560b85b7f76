#ifndef VFSYNTH_COMMON_FEDERATED_DP_FEDAVG_H_
#define VFSYNTH_COMMON_FEDERATED_DP_FEDAVG_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/random/secure_random.h"

namespace vfsynth {

// User-level DP-FedAvg (McMahan et al., ICLR 2018) for the horizontal mode `dpfedavg`,
// with the noise added where the users are: each party draws each of its users with
// probability q (Poisson sampling), clips every drawn user's update to L2 norm C, sums
// them and adds N(0, (z·2C)²) to every coordinate before the sum leaves. The run
// publishes its user counts exactly, so the neighbouring runs are replace-one (one user's
// rows swapped for another's), which moves the sum by at most 2C: the noise multiplier
// z is std / 2C, as in the vertical modes, and the party's privacy ledger charges every
// round as the Poisson-subsampled Gaussian at z against the curator and everyone.

// A party's release for one round: the sum of its users' updates, each clipped to L2 norm
// C as DP-SGD clips an example (ClipAndSum, dp_sgd.h: a non-finite update counts as zero),
// plus Gaussian noise of standard deviation z·2C per coordinate (from `noise`), as float32.
// INVALID_ARGUMENT for a non-positive C, a negative z, or updates of different shapes.
absl::StatusOr<torch::Tensor> NoisedClippedSum(const std::vector<torch::Tensor>& updates,
                                               int64_t dim, double clip_norm,
                                               double noise_multiplier, SecureRandom& noise);

// NoisedClippedSum over updates that arrive in batches: each batch clipped and added as it
// comes (in double), so no round holds more than one batch of updates.
class ClippedSumAccumulator {
 public:
  ClippedSumAccumulator(int64_t dim, double clip_norm);
  // Adds `updates` ([B, dim], one user a row), each clipped to the clip norm (a non-finite
  // one counts as zero). INVALID_ARGUMENT, adding nothing, for another shape.
  absl::Status Add(const torch::Tensor& updates);
  // The sum so far plus N(0, (z·2C)²) per coordinate (from `noise`), as float32;
  // INVALID_ARGUMENT for a non-positive C or a negative z.
  absl::StatusOr<torch::Tensor> Noised(double noise_multiplier, SecureRandom& noise) const;

 private:
  const int64_t dim_;
  const double clip_norm_;
  torch::Tensor sum_;  // float64
};

// The L2 sensitivity of a party's sum under replace-one: 2C.
double DpFedAvgSensitivity(double clip_norm);

// The round's average update: the parties' released sums added up and divided by the
// round's expected users (users_per_round, public; not the number drawn, which is private).
absl::StatusOr<torch::Tensor> FedAvgAverage(const std::vector<torch::Tensor>& released_sums,
                                            int64_t users_asked);

// The curator's optimiser under dpfedavg: Adam with the rounds' averages as the descent
// direction (FedAdam, Reddi et al., ICLR 2021), β1 = 0.9, β2 = 0.99, ε = 1e-8. Its
// momentum averages the noise of successive rounds away, and its per-coordinate scale
// makes the step independent of the clip norm's. A function of the released sums only,
// so it costs no privacy.
class FedAdam {
 public:
  struct State {
    torch::Tensor first_moment;   // float32, the model's size
    torch::Tensor second_moment;  // float32, the model's size
    int64_t steps = 0;
  };

  FedAdam(int64_t dim, double learning_rate);
  // flat += learning_rate · m̂ / (√v̂ + ε) after folding `average` into the moments.
  void Step(const torch::Tensor& average, torch::Tensor& flat);
  const State& state() const { return state_; }
  // INVALID_ARGUMENT, changing nothing, unless both moments are finite vectors of the
  // model's size, the second non-negative, and steps >= 0.
  absl::Status Restore(State state);

 private:
  const int64_t dim_;
  const double learning_rate_;
  State state_;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_FEDERATED_DP_FEDAVG_H_
