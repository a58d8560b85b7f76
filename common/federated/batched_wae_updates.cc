#include "common/federated/batched_wae_updates.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace vfsynth {
namespace {

// The four linear layers of a Wae with one copy per user: leaves of their own (views into
// one [B, d] tensor would make every backward pass build and add [B, d] gradients).
struct BatchedLayers {
  struct Layer {
    torch::Tensor weight;  // [B, out, in]
    torch::Tensor bias;    // [B, 1, out]
  };
  Layer layers[4];

  // Every tensor, in FlatParameters' order (each layer's weight, then its bias).
  std::vector<torch::Tensor> Tensors() const {
    std::vector<torch::Tensor> all;
    for (const Layer& layer : layers) {
      all.push_back(layer.weight);
      all.push_back(layer.bias);
    }
    return all;
  }
};

// `b` copies of the model `flat`, each parameter a leaf requiring its gradient.
BatchedLayers CopiesOf(const torch::Tensor& flat, const WaeOptions& a, int64_t b) {
  const int64_t shapes[4][2] = {
      {a.hidden, a.input_dim}, {a.latent, a.hidden}, {a.hidden, a.latent}, {a.input_dim, a.hidden}};
  BatchedLayers copies;
  int64_t offset = 0;
  auto copy = [&](int64_t size, at::IntArrayRef shape) {
    // clone, not contiguous: for one user the expanded view is contiguous already, and
    // training it in place would write into `flat`.
    torch::Tensor leaf =
        flat.slice(0, offset, offset + size).view(shape).expand({b, shape[0], shape[1]}).clone();
    offset += size;
    return leaf.set_requires_grad(true);
  };
  for (int i = 0; i < 4; ++i) {
    const int64_t out = shapes[i][0], in = shapes[i][1];
    copies.layers[i].weight = copy(out * in, {out, in});
    copies.layers[i].bias = copy(out, {1, out});
  }
  return copies;
}

torch::Tensor Affine(const torch::Tensor& x, const BatchedLayers::Layer& layer) {
  return torch::baddbmm(layer.bias, x, layer.weight.transpose(1, 2));
}

// The sum over the batch's users of WaeLoss on each user's rows x[i] ([B, m, D]) and prior
// samples prior[i] ([B, m, d_z]): its gradient's row i is user i's own gradient.
torch::Tensor BatchedWaeLoss(const BatchedLayers& model, const torch::Tensor& x,
                             const torch::Tensor& prior, int64_t latent) {
  const torch::Tensor codes = Affine(torch::relu(Affine(x, model.layers[0])), model.layers[1]);
  const torch::Tensor logits =
      Affine(torch::relu(Affine(codes, model.layers[2])), model.layers[3]);
  const torch::Tensor reconstruction =
      torch::binary_cross_entropy_with_logits(logits, x, {}, {}, at::Reduction::None).mean({1, 2});
  return (reconstruction + BatchedImqMmd(codes, prior, 2.0 * static_cast<double>(latent))).sum();
}

// torch::optim::Adam's update (no weight decay, no amsgrad), on every row at once.
class BatchedAdam {
 public:
  explicit BatchedAdam(double learning_rate) : learning_rate_(learning_rate) {}

  void Step(const std::vector<torch::Tensor>& params) {
    if (first_.empty()) {
      for (const torch::Tensor& p : params) {
        first_.push_back(torch::zeros_like(p));
        second_.push_back(torch::zeros_like(p));
      }
    }
    ++steps_;
    const double correction1 = 1 - std::pow(beta1_, static_cast<double>(steps_));
    const double correction2 = 1 - std::pow(beta2_, static_cast<double>(steps_));
    for (size_t i = 0; i < params.size(); ++i) {
      const torch::Tensor& grad = params[i].grad();
      first_[i].mul_(beta1_).add_(grad, 1 - beta1_);
      second_[i].mul_(beta2_).addcmul_(grad, grad, 1 - beta2_);
      const torch::Tensor denominator = (second_[i].sqrt() / std::sqrt(correction2)).add_(eps_);
      params[i].detach().addcdiv_(first_[i], denominator, -learning_rate_ / correction1);
    }
  }

 private:
  const double learning_rate_;
  const double beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8;
  std::vector<torch::Tensor> first_, second_;
  int64_t steps_ = 0;
};

// One batch of users with `n` rows each, trained in lockstep from `global`.
torch::Tensor TrainBatch(const WaeOptions& architecture, const torch::Tensor& global,
                         BatchedUpdateInputs& inputs, absl::Span<const int64_t> users, int64_t n,
                         const LocalUpdateOptions& options) {
  const int64_t b = static_cast<int64_t>(users.size());
  const BatchedLayers model = CopiesOf(global, architecture, b);
  const std::vector<torch::Tensor> params = model.Tensors();
  BatchedAdam adam(options.learning_rate);
  const int64_t batch = std::min(options.batch_size, n);
  std::vector<torch::Tensor> orders(static_cast<size_t>(b));
  std::vector<torch::Tensor> xs(static_cast<size_t>(b)), priors(static_cast<size_t>(b));
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    for (int64_t i = 0; i < b; ++i)
      orders[i] = torch::randperm(n, inputs.generators[users[i]], torch::kLong);
    // Full batches only, as LocalWaeUpdate: every step's MMD has as many codes.
    for (int64_t start = 0; start + batch <= n; start += batch) {
      for (int64_t i = 0; i < b; ++i) {
        xs[i] = inputs.rows[users[i]]->index_select(0, orders[i].slice(0, start, start + batch));
        priors[i] = torch::randn({batch, architecture.latent}, inputs.generators[users[i]]);
      }
      for (const torch::Tensor& p : params) {
        if (p.grad().defined()) p.mutable_grad().zero_();
      }
      BatchedWaeLoss(model, torch::stack(xs), torch::stack(priors), architecture.latent)
          .backward();
      torch::NoGradGuard no_grad;
      if (options.optimizer == LocalUpdateOptions::Optimizer::kSgd) {
        for (const torch::Tensor& p : params) p.detach().sub_(p.grad(), options.learning_rate);
      } else {
        adam.Step(params);
      }
    }
  }
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& p : params) flat.push_back(p.detach().reshape({b, -1}));
  return torch::cat(flat, 1).sub_(global.unsqueeze(0));
}

}  // namespace

absl::Status LocalWaeUpdates(
    const WaeOptions& architecture, const torch::Tensor& global, BatchedUpdateInputs& inputs,
    const LocalUpdateOptions& options, int64_t max_users_per_batch,
    absl::FunctionRef<absl::Status(absl::Span<const int64_t> users, const torch::Tensor& updates)>
        consume) {
  const size_t count = inputs.rows.size();
  if (inputs.generators.size() != count) {
    return absl::InvalidArgumentError(absl::StrCat(count, " users' rows but ",
                                                   inputs.generators.size(), " generators"));
  }
  if (global.dim() != 1 || global.numel() != WaeParameterCount(architecture)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a model of ", global.numel(), " values for an autoencoder of ",
                     WaeParameterCount(architecture), " parameters"));
  }
  if (max_users_per_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("users per batch must be >= 1, got ", max_users_per_batch));
  }
  std::map<int64_t, std::vector<int64_t>> by_rows;  // row count -> users, in input order
  for (size_t u = 0; u < count; ++u) {
    const torch::Tensor* rows = inputs.rows[u];
    if (rows == nullptr || rows->dim() != 2 || rows->size(0) < 1 ||
        rows->size(1) != architecture.input_dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a local update needs rows of ", architecture.input_dim, " encoded columns"));
    }
    by_rows[rows->size(0)].push_back(static_cast<int64_t>(u));
  }
  const torch::Tensor start = global.to(torch::kFloat32).contiguous();
  for (const auto& [n, users] : by_rows) {
    for (size_t first = 0; first < users.size(); first += static_cast<size_t>(max_users_per_batch)) {
      const absl::Span<const int64_t> batch = absl::MakeConstSpan(users).subspan(
          first, std::min(users.size() - first, static_cast<size_t>(max_users_per_batch)));
      RETURN_IF_ERROR(consume(batch, TrainBatch(architecture, start, inputs, batch, n, options)));
    }
  }
  return absl::OkStatus();
}

int64_t UsersPerBatch(int64_t parameters) {
  // 16 MiB: below glibc's largest mmap threshold (32 MiB), so a step's freed tensors stay
  // in the heap for the next step instead of being mapped, faulted in and zeroed anew.
  constexpr int64_t kValuesPerTensor = int64_t{1} << 22;
  return std::max<int64_t>(1, kValuesPerTensor / std::max<int64_t>(1, parameters));
}

}  // namespace vfsynth
