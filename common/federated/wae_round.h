#ifndef VFSYNTH_COMMON_FEDERATED_WAE_ROUND_H_
#define VFSYNTH_COMMON_FEDERATED_WAE_ROUND_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/nn/wae.h"
#include "common/privacy/sign_ds.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// How one user's local update is trained: signds as DP-FED-WAE (E = 10 epochs of Adam at
// η = 0.001); dpfedavg with plain SGD, whose averaged updates are the users' mean gradient
// (Adam's per-coordinate normalisation makes an average of one-row users' updates a
// per-coordinate vote instead, which drifts away from the data).
struct LocalUpdateOptions {
  enum class Optimizer { kAdam, kSgd };
  int epochs = 10;
  double learning_rate = 1e-3;
  int64_t batch_size = 32;  // a user with fewer rows trains on all of them at once
  Optimizer optimizer = Optimizer::kAdam;
};

// The local optimiser of privacy mode `mode` (signds or dpfedavg).
LocalUpdateOptions::Optimizer LocalOptimizer(v1::PrivacyConfig::Mode mode);
// The local update of resolved settings `horizontal` under `mode`, as every party runs it.
LocalUpdateOptions LocalUpdateOf(const v1::HorizontalConfig& horizontal,
                                 v1::PrivacyConfig::Mode mode);

// One user's local update: `global` (the broadcast model's flat parameters) trained on the
// user's encoded rows (n × D, n >= 1), minus `global`. Batches and prior
// samples come from `generator`.
absl::StatusOr<torch::Tensor> LocalWaeUpdate(const WaeOptions& architecture,
                                             const torch::Tensor& global, const torch::Tensor& rows,
                                             const LocalUpdateOptions& options,
                                             torch::Generator& generator);

// The curator's step from the round's reports: every report moves its coordinate by
// ±gamma / n, n the number of reports. INVALID_ARGUMENT, changing nothing, for a report
// whose index is outside the model.
absl::Status ApplySignDsReports(const std::vector<SignDsReport>& reports, double gamma,
                                torch::Tensor& flat);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_FEDERATED_WAE_ROUND_H_
