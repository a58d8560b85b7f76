#include "common/federated/wae_round.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace vfsynth {

LocalUpdateOptions::Optimizer LocalOptimizer(v1::PrivacyConfig::Mode mode) {
  return mode == v1::PrivacyConfig::dpfedavg ? LocalUpdateOptions::Optimizer::kSgd
                                             : LocalUpdateOptions::Optimizer::kAdam;
}

LocalUpdateOptions LocalUpdateOf(const v1::HorizontalConfig& horizontal,
                                 v1::PrivacyConfig::Mode mode) {
  return LocalUpdateOptions{horizontal.local_epochs(), horizontal.local_learning_rate(),
                            horizontal.local_batch_size(), LocalOptimizer(mode)};
}

absl::StatusOr<torch::Tensor> LocalWaeUpdate(const WaeOptions& architecture,
                                             const torch::Tensor& global, const torch::Tensor& rows,
                                             const LocalUpdateOptions& options,
                                             torch::Generator& generator) {
  if (rows.dim() != 2 || rows.size(0) < 1 || rows.size(1) != architecture.input_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("a local update needs rows of ", architecture.input_dim, " encoded columns"));
  }
  Wae local(architecture);
  RETURN_IF_ERROR(AssignFlatParameters(*local, global));
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (options.optimizer == LocalUpdateOptions::Optimizer::kSgd) {
    optimizer = std::make_unique<torch::optim::SGD>(
        local->parameters(), torch::optim::SGDOptions(options.learning_rate));
  } else {
    optimizer = std::make_unique<torch::optim::Adam>(
        local->parameters(), torch::optim::AdamOptions(options.learning_rate));
  }
  const int64_t n = rows.size(0);
  const int64_t batch = std::min(options.batch_size, n);
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    const torch::Tensor order = torch::randperm(n, generator, torch::kLong);
    // Full batches only: every step's MMD estimate has as many codes as the last.
    for (int64_t start = 0; start + batch <= n; start += batch) {
      const torch::Tensor x = rows.index_select(0, order.slice(0, start, start + batch));
      optimizer->zero_grad();
      WaeLoss(local, x, torch::randn({batch, architecture.latent}, generator)).backward();
      optimizer->step();
    }
  }
  return FlatParameters(*local) - global;
}

absl::Status ApplySignDsReports(const std::vector<SignDsReport>& reports, double gamma,
                                torch::Tensor& flat) {
  if (reports.empty()) return absl::OkStatus();
  for (const SignDsReport& report : reports) {
    if (report.index < 0 || report.index >= flat.numel()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a SignDS report names coordinate ", report.index, " of a model of ", flat.numel()));
    }
  }
  const double step = gamma / static_cast<double>(reports.size());
  auto values = flat.accessor<float, 1>();
  for (const SignDsReport& report : reports)
    values[report.index] += static_cast<float>(report.positive ? step : -step);
  return absl::OkStatus();
}

}  // namespace vfsynth
