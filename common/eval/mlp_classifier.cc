#include "common/eval/mlp_classifier.h"

#include <torch/torch.h>

#include <cmath>

#include "absl/strings/str_cat.h"

namespace vfsynth {

// Explicit parameters rather than torch::nn::Linear: a Linear initialises itself from
// the process-wide generator when constructed, and this classifier is seeded by its
// options alone (LibTorch's default distribution, uniform within 1/sqrt(fan_in)).
struct MlpClassifier::Net {
  torch::Tensor w1, b1, w2, b2;

  Net(int64_t inputs, int64_t hidden, int64_t outputs, torch::Generator& gen)
      : w1(Uniform({hidden, inputs}, inputs, gen)),
        b1(Uniform({hidden}, inputs, gen)),
        w2(Uniform({outputs, hidden}, hidden, gen)),
        b2(Uniform({outputs}, hidden, gen)) {}

  static torch::Tensor Uniform(std::vector<int64_t> shape, int64_t fan_in, torch::Generator& gen) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    return torch::empty(shape).uniform_(-bound, bound, gen).requires_grad_(true);
  }
  std::vector<torch::Tensor> parameters() const { return {w1, b1, w2, b2}; }
  torch::Tensor forward(const torch::Tensor& x) const {
    return torch::nn::functional::linear(torch::relu(torch::nn::functional::linear(x, w1, b1)), w2,
                                         b2);
  }
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
    torch::set_num_threads(options_.threads);
    torch::Generator generator = torch::make_generator<torch::CPUGeneratorImpl>(options_.seed);
    net_ = std::make_unique<Net>(x.cols, options_.hidden, num_classes, generator);
    const torch::Tensor features =
        torch::from_blob(const_cast<float*>(x.values.data()), {x.rows, x.cols}, torch::kFloat32);
    std::vector<int64_t> labels64(y.begin(), y.end());
    const torch::Tensor labels = torch::tensor(labels64, torch::kInt64);
    torch::optim::Adam optimizer(net_->parameters(),
                                 torch::optim::AdamOptions(options_.learning_rate));
    for (int epoch = 0; epoch < options_.epochs; ++epoch) {
      const torch::Tensor order = torch::randperm(x.rows, generator, torch::kInt64);
      for (int64_t start = 0; start < x.rows; start += options_.batch_size) {
        const torch::Tensor batch =
            order.slice(0, start, std::min<int64_t>(start + options_.batch_size, x.rows));
        optimizer.zero_grad();
        const torch::Tensor loss = torch::nn::functional::cross_entropy(
            net_->forward(features.index_select(0, batch)), labels.index_select(0, batch));
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
        torch::softmax(net_->forward(features), 1).to(torch::kFloat64).contiguous();
    std::copy(proba.data_ptr<double>(), proba.data_ptr<double>() + out.size(), out.begin());
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("mlp prediction failed: ", e.what_without_backtrace()));
  }
  return out;
}

}  // namespace vfsynth
