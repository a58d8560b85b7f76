#include "common/eval/mlp_classifier.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"

namespace vfsynth {

struct MlpClassifier::Net {
  torch::nn::Sequential model{nullptr};
};

MlpClassifier::MlpClassifier(MlpOptions options) : options_(options) {}
MlpClassifier::~MlpClassifier() = default;

absl::Status MlpClassifier::Fit(const FeatureMatrix& x, const std::vector<int>& y,
                                int num_classes) {
  if (x.rows == 0 || num_classes < 2 || static_cast<int64_t>(y.size()) != x.rows) {
    return absl::InvalidArgumentError("mlp: need rows, labels and >= 2 classes");
  }
  num_classes_ = num_classes;
  try {
    torch::manual_seed(options_.seed);
    torch::set_num_threads(options_.threads);
    net_ = std::make_unique<Net>();
    net_->model = torch::nn::Sequential(torch::nn::Linear(x.cols, options_.hidden),
                                        torch::nn::ReLU(),
                                        torch::nn::Linear(options_.hidden, num_classes));
    const torch::Tensor features =
        torch::from_blob(const_cast<float*>(x.values.data()), {x.rows, x.cols}, torch::kFloat32);
    std::vector<int64_t> labels64(y.begin(), y.end());
    const torch::Tensor labels = torch::tensor(labels64, torch::kInt64);
    torch::optim::Adam optimizer(net_->model->parameters(),
                                 torch::optim::AdamOptions(options_.learning_rate));
    torch::Generator generator = torch::make_generator<torch::CPUGeneratorImpl>(options_.seed);
    for (int epoch = 0; epoch < options_.epochs; ++epoch) {
      const torch::Tensor order = torch::randperm(x.rows, generator, torch::kInt64);
      for (int64_t start = 0; start < x.rows; start += options_.batch_size) {
        const torch::Tensor batch =
            order.slice(0, start, std::min<int64_t>(start + options_.batch_size, x.rows));
        optimizer.zero_grad();
        const torch::Tensor loss = torch::nn::functional::cross_entropy(
            net_->model->forward(features.index_select(0, batch)), labels.index_select(0, batch));
        loss.backward();
        optimizer.step();
      }
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("mlp training failed: ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> MlpClassifier::PredictProba(const FeatureMatrix& x) const {
  std::vector<double> out(static_cast<size_t>(x.rows) * num_classes_, 0.0);
  if (!net_) return absl::FailedPreconditionError("mlp: PredictProba before Fit");
  if (x.rows == 0) return out;
  try {
    torch::NoGradGuard no_grad;
    const torch::Tensor features =
        torch::from_blob(const_cast<float*>(x.values.data()), {x.rows, x.cols}, torch::kFloat32);
    const torch::Tensor proba =
        torch::softmax(net_->model->forward(features), 1).to(torch::kFloat64).contiguous();
    std::copy(proba.data_ptr<double>(), proba.data_ptr<double>() + out.size(), out.begin());
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("mlp prediction failed: ", e.what_without_backtrace()));
  }
  return out;
}

}  // namespace vfsynth
