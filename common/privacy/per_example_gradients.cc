#include "common/privacy/per_example_gradients.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {
namespace {

// One layer read out of a stage's Sequential.
struct Layer {
  torch::nn::LinearImpl* linear = nullptr;  // Null for a LeakyReLU.
  double slope = 0.0;                       // LeakyReLU negative slope.
};

struct Stage {
  std::vector<Layer> layers;
  std::vector<torch::Tensor> params;  // The Sequential's parameters() order.
};

absl::StatusOr<std::shared_ptr<torch::nn::SequentialImpl>> ResolveSequential(
    const CriticStage& stage, size_t index) {
  if (stage == nullptr) return absl::InvalidArgumentError(absl::StrCat("stage ", index, " is null"));
  if (auto seq = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(stage)) return seq;
  const auto children = stage->children();
  if (children.size() == 1) {
    if (auto seq = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(children[0])) {
      // A wrapper with parameters of its own would be silently left out of the gradients.
      if (stage->parameters().size() != seq->parameters().size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "stage ", index, " (", stage->name(), ") has parameters outside its Sequential"));
      }
      return seq;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "stage ", index, " (", stage->name(),
      ") is neither a Sequential nor a module wrapping exactly one Sequential"));
}

absl::StatusOr<Stage> ParseStage(const CriticStage& module, size_t index) {
  absl::StatusOr<std::shared_ptr<torch::nn::SequentialImpl>> seq = ResolveSequential(module, index);
  if (!seq.ok()) return seq.status();
  Stage stage;
  size_t layer_index = 0;
  for (const auto& child : (*seq)->children()) {
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(child.get())) {
      stage.layers.push_back({linear, 0.0});
      stage.params.push_back(linear->weight);
      if (linear->options.bias()) stage.params.push_back(linear->bias);
    } else if (auto* leaky = dynamic_cast<torch::nn::LeakyReLUImpl*>(child.get())) {
      stage.layers.push_back({nullptr, leaky->options.negative_slope()});
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage ", index, " layer ", layer_index, " is a ", child->name(),
          "; per-example gradients support only Linear and LeakyReLU"));
    }
    ++layer_index;
  }
  if (stage.layers.empty() || stage.layers.front().linear == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("stage ", index, " must start with a Linear layer"));
  }
  // Guards against parameters the layer walk did not see (e.g. a future module type).
  if (stage.params.size() != (*seq)->parameters().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("stage ", index, " has parameters outside its Linear layers"));
  }
  return stage;
}

absl::StatusOr<std::vector<Stage>> ParseStages(const std::vector<CriticStage>& modules) {
  if (modules.empty()) return absl::InvalidArgumentError("critic has no stages");
  std::vector<Stage> stages;
  for (size_t k = 0; k < modules.size(); ++k) {
    absl::StatusOr<Stage> stage = ParseStage(modules[k], k);
    if (!stage.ok()) return stage.status();
    stages.push_back(*std::move(stage));
  }
  return stages;
}

int64_t InputWidth(const Stage& stage) { return stage.layers.front().linear->weight.size(1); }

int64_t OutputWidth(const Stage& stage) {
  for (auto it = stage.layers.rbegin(); it != stage.layers.rend(); ++it) {
    if (it->linear != nullptr) return it->linear->weight.size(0);
  }
  return -1;
}

absl::Status CheckShapes(const std::vector<Stage>& stages, const CriticExamples& ex) {
  for (size_t k = 1; k < stages.size(); ++k) {
    if (InputWidth(stages[k]) != OutputWidth(stages[k - 1])) {
      return absl::InvalidArgumentError(absl::StrCat("stage ", k, " takes width ",
                                                     InputWidth(stages[k]), " but stage ", k - 1,
                                                     " outputs ", OutputWidth(stages[k - 1])));
    }
  }
  if (OutputWidth(stages.back()) != 1) {
    return absl::InvalidArgumentError("the critic's last stage must output one score per row");
  }
  if (!ex.real.defined() || !ex.fake.defined() || !ex.alpha.defined()) {
    return absl::InvalidArgumentError("real, fake and alpha are required");
  }
  const int64_t d_in = InputWidth(stages.front());
  if (ex.real.dim() != 2 || ex.real.size(0) < 1 || ex.real.size(1) != d_in) {
    return absl::InvalidArgumentError(absl::StrCat("real must be [B, ", d_in, "] with B >= 1"));
  }
  const int64_t b = ex.real.size(0);
  if (!ex.fake.sizes().equals(ex.real.sizes())) {
    return absl::InvalidArgumentError("fake must have the shape of real");
  }
  if (ex.alpha.dim() != 2 || ex.alpha.size(0) != b || ex.alpha.size(1) != 1) {
    return absl::InvalidArgumentError("alpha must be [B, 1]");
  }
  const int64_t d_1 = OutputWidth(stages.front());
  for (const torch::Tensor* g : {&ex.upstream_real, &ex.upstream_fake}) {
    if (g->defined() && (g->dim() != 2 || g->size(0) != b || g->size(1) != d_1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("upstream feature gradients must be [B, ", d_1, "]"));
    }
  }
  return absl::OkStatus();
}

// Per-example replicas of one stage's parameters: leaves whose row i stands for example i.
struct Replicas {
  std::vector<torch::Tensor> weight;  // Per Linear: [B, out, in] (stride-0 expand).
  std::vector<torch::Tensor> bias;    // Per Linear: [B, out] or undefined.
};

Replicas Replicate(const Stage& stage, int64_t b, std::vector<torch::Tensor>* leaves) {
  Replicas rep;
  for (const Layer& layer : stage.layers) {
    if (layer.linear == nullptr) continue;
    const torch::Tensor& w = layer.linear->weight;
    torch::Tensor w_rep = w.detach().unsqueeze(0).expand({b, w.size(0), w.size(1)});
    w_rep.requires_grad_(true);
    leaves->push_back(w_rep);
    rep.weight.push_back(w_rep);
    if (layer.linear->options.bias()) {
      const torch::Tensor& bias = layer.linear->bias;
      torch::Tensor b_rep = bias.detach().unsqueeze(0).expand({b, bias.size(0)});
      b_rep.requires_grad_(true);
      leaves->push_back(b_rep);
      rep.bias.push_back(b_rep);
    } else {
      rep.bias.emplace_back();
    }
  }
  return rep;
}

// x: [B, n, in] (n rows per example) -> [B, n, out], row block i through replica i.
torch::Tensor Forward(const Stage& stage, const Replicas& rep, torch::Tensor x) {
  size_t linear_index = 0;
  for (const Layer& layer : stage.layers) {
    if (layer.linear == nullptr) {
      x = torch::leaky_relu(x, layer.slope);
      continue;
    }
    const torch::Tensor w_t = rep.weight[linear_index].transpose(1, 2);
    const torch::Tensor& bias = rep.bias[linear_index];
    x = bias.defined() ? torch::baddbmm(bias.unsqueeze(1), x, w_t) : torch::bmm(x, w_t);
    ++linear_index;
  }
  return x;
}

}  // namespace

absl::StatusOr<std::vector<torch::Tensor>> CriticParameters(const std::vector<CriticStage>& stages) {
  absl::StatusOr<std::vector<Stage>> parsed = ParseStages(stages);
  if (!parsed.ok()) return parsed.status();
  std::vector<torch::Tensor> params;
  for (const Stage& stage : *parsed) params.insert(params.end(), stage.params.begin(), stage.params.end());
  return params;
}

absl::StatusOr<PerExampleGradients> CriticPerExampleGradients(
    const std::vector<CriticStage>& stages, const CriticExamples& examples,
    const PerExampleGradientOptions& options) {
  absl::StatusOr<std::vector<Stage>> parsed = ParseStages(stages);
  if (!parsed.ok()) return parsed.status();
  if (absl::Status status = CheckShapes(*parsed, examples); !status.ok()) return status;
  try {
    torch::AutoGradMode grad_mode(true);
    const int64_t b = examples.real.size(0);
    std::vector<torch::Tensor> leaves;
    std::vector<Replicas> replicas;
    for (const Stage& stage : *parsed) replicas.push_back(Replicate(stage, b, &leaves));
    const size_t num_params = leaves.size();

    torch::Tensor real = examples.real.detach();
    torch::Tensor fake = examples.fake.detach();
    torch::Tensor x_hat;
    if (options.input_gradients) {
      real.requires_grad_(true);
      fake.requires_grad_(true);
      leaves.push_back(real);
      leaves.push_back(fake);
      // Through r and f, so the penalty's dependence on the inputs is included.
      x_hat = examples.alpha * real + (1 - examples.alpha) * fake;
    } else {
      x_hat = (examples.alpha * real + (1 - examples.alpha) * fake).detach().requires_grad_(true);
    }

    // Rows r_i, f_i, x̂_i of example i share one replica: a single bmm per layer.
    torch::Tensor h = torch::stack({real, fake, x_hat}, 1);
    torch::Tensor first_stage_out;
    for (size_t k = 0; k < parsed->size(); ++k) {
      h = Forward((*parsed)[k], replicas[k], h);
      if (k == 0) first_stage_out = h;
    }
    const torch::Tensor scores = h.squeeze(2);  // [B, 3]
    const torch::Tensor grad_x =
        torch::autograd::grad({scores.select(1, 2).sum()}, {x_hat}, /*grad_outputs=*/{},
                              /*retain_graph=*/true, /*create_graph=*/true)[0];
    torch::Tensor loss = scores.select(1, 1) - scores.select(1, 0) +
                         examples.gp_lambda * (grad_x.norm(2, 1) - 1).pow(2);
    if (examples.upstream_real.defined()) {
      loss = loss + (first_stage_out.select(1, 0) * examples.upstream_real.detach()).sum(1);
    }
    if (examples.upstream_fake.defined()) {
      loss = loss + (first_stage_out.select(1, 1) * examples.upstream_fake.detach()).sum(1);
    }
    // Example i's loss depends only on replica row i, so the gradient of the sum is per-example.
    std::vector<torch::Tensor> grads = torch::autograd::grad({loss.sum()}, leaves);

    PerExampleGradients result;
    result.grads.assign(grads.begin(), grads.begin() + static_cast<std::ptrdiff_t>(num_params));
    if (options.input_gradients) {
      result.input_grad_real = grads[num_params];
      result.input_grad_fake = grads[num_params + 1];
    }
    result.loss = loss.detach();
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("per-example gradients: ", e.what_without_backtrace()));
  }
}

torch::Tensor FlattenPerExample(const std::vector<torch::Tensor>& per_example) {
  std::vector<torch::Tensor> flat;
  flat.reserve(per_example.size());
  for (const auto& g : per_example) flat.push_back(g.reshape({g.size(0), -1}));
  return torch::cat(flat, 1);
}

torch::Tensor PerExampleNorms(const std::vector<torch::Tensor>& per_example) {
  torch::Tensor sq;
  for (const auto& g : per_example) {
    const torch::Tensor s = g.reshape({g.size(0), -1}).to(torch::kDouble).pow(2).sum(1);
    sq = sq.defined() ? sq + s : s;
  }
  return sq.sqrt();
}

}  // namespace vfsynth
