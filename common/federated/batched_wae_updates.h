#ifndef VFSYNTH_COMMON_FEDERATED_BATCHED_WAE_UPDATES_H_
#define VFSYNTH_COMMON_FEDERATED_BATCHED_WAE_UPDATES_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/federated/wae_round.h"
#include "common/nn/wae.h"

namespace vfsynth {

// Many users' local updates as one batched computation: each user's own copy of the
// model is a row of one [B, d] tensor, trained in lockstep with the others by batched
// matrix products, so a round's cost is a few large tensor operations instead of one
// module and optimiser per user. Each user's result is LocalWaeUpdate's for its rows and
// generator (the same draws in the same order; equal up to float rounding).
//
// Users train in groups of equal row counts (their steps are the same), at most
// `max_users_per_batch` at a time. `consume(users, updates)` is called once per batch with
// the batch's positions in `rows` and their updates ([B, d] float32, row i the update of
// users[i]); the first error it returns stops the computation and is returned.
struct BatchedUpdateInputs {
  std::vector<const torch::Tensor*> rows;    // per user: n_u × D encoded rows, n_u >= 1
  std::vector<torch::Generator> generators;  // per user: its batches' order and prior samples
};
absl::Status LocalWaeUpdates(
    const WaeOptions& architecture, const torch::Tensor& global, BatchedUpdateInputs& inputs,
    const LocalUpdateOptions& options, int64_t max_users_per_batch,
    absl::FunctionRef<absl::Status(absl::Span<const int64_t> users, const torch::Tensor& updates)>
        consume);

// Users per batch keeping each [B, d] tensor of a batch near 16 MiB (at least one user).
int64_t UsersPerBatch(int64_t parameters);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_FEDERATED_BATCHED_WAE_UPDATES_H_
