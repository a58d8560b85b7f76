#include "common/nn/mlp_critic.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vfsynth {
namespace {

absl::StatusOr<std::shared_ptr<torch::nn::SequentialImpl>> ResolveSequential(
    const CriticStage& stage, size_t index) {
  if (stage == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("stage ", index, " is null"));
  if (auto seq = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(stage)) return seq;
  const auto children = stage->children();
  if (children.size() == 1) {
    if (auto seq = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(children[0])) {
      // A wrapper with parameters of its own would be silently left out of the gradients.
      if (stage->parameters().size() != seq->parameters().size()) {
        return absl::InvalidArgumentError(absl::StrCat("stage ", index, " (", stage->name(),
                                                       ") has parameters outside its Sequential"));
      }
      return seq;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("stage ", index, " (", stage->name(),
                   ") is neither a Sequential nor a module wrapping exactly one Sequential"));
}

// Appends the stage's layers and parameters to *critic.
absl::Status ParseStage(const CriticStage& module, size_t index, MlpCritic* critic) {
  absl::StatusOr<std::shared_ptr<torch::nn::SequentialImpl>> seq = ResolveSequential(module, index);
  if (!seq.ok()) return seq.status();
  const size_t first_layer = critic->layers.size();
  const size_t first_param = critic->params.size();
  size_t layer_index = 0;
  for (const auto& child : (*seq)->children()) {
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(child.get())) {
      critic->layers.push_back({linear, 0.0});
      critic->params.push_back(linear->weight);
      if (linear->options.bias()) critic->params.push_back(linear->bias);
    } else if (auto* leaky = dynamic_cast<torch::nn::LeakyReLUImpl*>(child.get())) {
      critic->layers.push_back({nullptr, leaky->options.negative_slope()});
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("stage ", index, " layer ", layer_index, " is a ", child->name(),
                       "; MLP critics support only Linear and LeakyReLU"));
    }
    ++layer_index;
  }
  if (critic->layers.size() == first_layer || critic->layers[first_layer].linear == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("stage ", index, " must start with a Linear layer"));
  }
  // Guards against parameters the layer walk did not see (e.g. a future module type).
  if (critic->params.size() - first_param != (*seq)->parameters().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("stage ", index, " has parameters outside its Linear layers"));
  }
  critic->stage_ends.push_back(critic->layers.size());
  return absl::OkStatus();
}

size_t StageBegin(const MlpCritic& critic, size_t stage) {
  return stage == 0 ? 0 : critic.stage_ends[stage - 1];
}

}  // namespace

int64_t InputWidth(const MlpCritic& critic) { return critic.layers.front().linear->weight.size(1); }

absl::Status CheckCriticBatch(const MlpCritic& critic, const torch::Tensor& real,
                              const torch::Tensor& fake, const torch::Tensor& alpha) {
  if (!real.defined() || !fake.defined() || !alpha.defined()) {
    return absl::InvalidArgumentError("real, fake and alpha are required");
  }
  const int64_t d_in = InputWidth(critic);
  if (real.dim() != 2 || real.size(0) < 1 || real.size(1) != d_in) {
    return absl::InvalidArgumentError(absl::StrCat("real must be [B, ", d_in, "] with B >= 1"));
  }
  if (!fake.sizes().equals(real.sizes())) {
    return absl::InvalidArgumentError("fake must have the shape of real");
  }
  if (alpha.dim() != 2 || alpha.size(0) != real.size(0) || alpha.size(1) != 1) {
    return absl::InvalidArgumentError("alpha must be [B, 1]");
  }
  return absl::OkStatus();
}

int64_t StageOutputWidth(const MlpCritic& critic, size_t stage) {
  for (size_t l = critic.stage_ends[stage]; l-- > StageBegin(critic, stage);) {
    if (critic.layers[l].linear != nullptr) return critic.layers[l].linear->weight.size(0);
  }
  return -1;  // unreachable: ParseStage requires a leading Linear
}

absl::StatusOr<MlpCritic> ParseMlpCritic(const std::vector<CriticStage>& stages) {
  if (stages.empty()) return absl::InvalidArgumentError("critic has no stages");
  MlpCritic critic;
  for (size_t k = 0; k < stages.size(); ++k) {
    if (absl::Status status = ParseStage(stages[k], k, &critic); !status.ok()) return status;
  }
  for (size_t k = 1; k < stages.size(); ++k) {
    const int64_t input = critic.layers[StageBegin(critic, k)].linear->weight.size(1);
    if (input != StageOutputWidth(critic, k - 1)) {
      return absl::InvalidArgumentError(absl::StrCat("stage ", k, " takes width ", input,
                                                     " but stage ", k - 1, " outputs ",
                                                     StageOutputWidth(critic, k - 1)));
    }
  }
  if (StageOutputWidth(critic, stages.size() - 1) != 1) {
    return absl::InvalidArgumentError("the critic's last stage must output one score per row");
  }
  return critic;
}

std::vector<torch::Tensor> LayerInputs(const MlpCritic& critic, const torch::Tensor& x,
                                       torch::Tensor* output) {
  const std::vector<MlpLayer>& layers = critic.layers;
  const size_t evaluated = output != nullptr ? layers.size() : layers.size() - 1;
  std::vector<torch::Tensor> inputs(layers.size());
  torch::Tensor a = x;
  for (size_t l = 0; l < layers.size(); ++l) {
    inputs[l] = a;
    if (l == evaluated) break;
    a = layers[l].linear != nullptr
            ? torch::linear(a, layers[l].linear->weight, layers[l].linear->bias)
            : torch::leaky_relu(a, layers[l].slope);
  }
  if (output != nullptr) *output = a;
  return inputs;
}

std::vector<ChainLayer> ChainAt(const MlpCritic& critic, const std::vector<torch::Tensor>& inputs,
                                int64_t start, int64_t n) {
  std::vector<ChainLayer> chain(critic.layers.size());
  for (size_t l = 0; l < chain.size(); ++l) {
    const MlpLayer& layer = critic.layers[l];
    if (layer.linear != nullptr) {
      chain[l].weight = layer.linear->weight;
    } else {
      chain[l].leaky_input = inputs[l].narrow(0, start, n);
      chain[l].slope = layer.slope;
    }
  }
  return chain;
}

torch::Tensor ThroughLeaky(const torch::Tensor& grad, const torch::Tensor& input, double slope) {
  return torch::leaky_relu_backward(grad, input, slope, /*self_is_result=*/false);
}

torch::Tensor ScoreInputGradient(const std::vector<ChainLayer>& chain, int64_t rows,
                                 std::vector<torch::Tensor>* u) {
  u->assign(chain.size(), torch::Tensor());
  // One score per row, so ∂D/∂(output) = 1.
  torch::Tensor v = torch::ones({rows, 1}, chain.front().weight.options());
  for (size_t l = chain.size(); l-- > 0;) {
    const ChainLayer& layer = chain[l];
    if (layer.weight.defined()) {
      (*u)[l] = v;
      v = v.mm(layer.weight);
    } else {
      v = ThroughLeaky(v, layer.leaky_input, layer.slope);
    }
  }
  return v;
}

torch::Tensor PenaltyRows(const torch::Tensor& g, double scale, torch::Tensor* rho) {
  const torch::Tensor norm = g.norm(2, 1, /*keepdim=*/true);
  *rho = torch::where(norm > 0, 2 * scale * (norm - 1) / norm, torch::zeros_like(norm)) * g;
  return (norm.squeeze(1) - 1).pow(2);
}

std::vector<torch::Tensor> PenaltyWeightFactors(const std::vector<ChainLayer>& chain,
                                                torch::Tensor rho) {
  std::vector<torch::Tensor> factors(chain.size());
  size_t last_linear = 0;
  for (size_t l = 0; l < chain.size(); ++l) {
    if (chain[l].weight.defined()) last_linear = l;
  }
  for (size_t l = 0; l <= last_linear; ++l) {
    const ChainLayer& layer = chain[l];
    if (layer.weight.defined()) {
      factors[l] = rho;
      if (l < last_linear) rho = rho.mm(layer.weight.t());
    } else {
      rho = ThroughLeaky(rho, layer.leaky_input, layer.slope);
    }
  }
  return factors;
}

}  // namespace vfsynth
