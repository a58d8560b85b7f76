#ifndef VFSYNTH_COMMON_FEDERATED_WAE_ROUND_H_
#define VFSYNTH_COMMON_FEDERATED_WAE_ROUND_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/nn/wae.h"
#include "common/privacy/sign_ds.h"

namespace vfsynth {

// How one user's local update is trained (DP-FED-WAE: E epochs of Adam at η = 0.001).
struct LocalUpdateOptions {
  int epochs = 10;
  double learning_rate = 1e-3;
  int64_t batch_size = 32;  // a user with fewer rows trains on all of them at once
};

// One user's local update: `global` (the broadcast model's flat parameters) trained on the
// user's encoded rows (n × D, n >= 1), minus `global`. Batches and prior
// samples come from `generator`.
absl::StatusOr<torch::Tensor> LocalWaeUpdate(const WaeOptions& architecture, const torch::Tensor& global,
                                             const torch::Tensor& rows, const LocalUpdateOptions& options,
                                             torch::Generator& generator);

// The curator's step from the round's reports: every report moves its coordinate by
// ±gamma / n, n the number of reports. INVALID_ARGUMENT, changing nothing, for a report
// whose index is outside the model.
absl::Status ApplySignDsReports(const std::vector<SignDsReport>& reports, double gamma, torch::Tensor& flat);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_FEDERATED_WAE_ROUND_H_
