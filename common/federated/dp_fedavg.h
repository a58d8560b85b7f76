#ifndef VFSYNTH_COMMON_FEDERATED_DP_FEDAVG_H_
#define VFSYNTH_COMMON_FEDERATED_DP_FEDAVG_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/privacy/secure_random.h"

namespace vfsynth {

// User-level DP-FedAvg (McMahan et al., ICLR 2018) for the horizontal mode `dpfedavg`,
// with the noise added where the users are: each party clips every answering user's
// update to L2 norm C, sums them and adds N(0, (z·2C)²) to every coordinate before the sum
// leaves. Replacing one user's data moves the sum by at most 2C (the accountant's
// replace-one convention, rdp.h), so the released sum is the sampled Gaussian mechanism at
// noise multiplier z against the curator and everyone; the party's privacy ledger
// accounts it per round (sample rate = users asked / users held).

// A party's release for one round: the sum of its users' updates, each clipped to L2 norm
// C as DP-SGD clips an example (ClipAndSum, dp_sgd.h: a non-finite update counts as zero),
// plus Gaussian noise of standard deviation z·2C per coordinate (from `noise`), as float32.
// INVALID_ARGUMENT for a non-positive C, a negative z, or updates of different shapes.
absl::StatusOr<torch::Tensor> NoisedClippedSum(const std::vector<torch::Tensor>& updates, int64_t dim, double clip_norm,
                                               double noise_multiplier, SecureRandom& noise);

// The curator's step: the parties' released sums added up and divided by the round's
// users asked (public, not the number that answered), times γ.
absl::StatusOr<torch::Tensor> FedAvgStep(const std::vector<torch::Tensor>& released_sums, int64_t users_asked,
                                         double gamma);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_FEDERATED_DP_FEDAVG_H_
