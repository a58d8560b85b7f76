#include "common/nn/networks.h"

#include <ATen/CPUGeneratorImpl.h>

#include <numeric>

#include "common/base/stream_seed.h"
#include "common/random/random_tensors.h"

namespace vfsynth {

std::mutex& DefaultGeneratorMutex() {
  static std::mutex mutex;
  return mutex;
}

at::Generator StreamGenerator(const std::string& key, const std::string& purpose,
                              uint64_t counter) {
  return at::make_generator<at::CPUGeneratorImpl>(DeriveStreamSeed(key, purpose, counter));
}

void InitializeFromStream(torch::nn::Module& module, SecureRandom& stream) {
  torch::NoGradGuard no_grad;
  for (const std::shared_ptr<torch::nn::Module>& child : module.modules()) {
    if (child->parameters(/*recurse=*/false).empty()) continue;
    auto* linear = dynamic_cast<torch::nn::LinearImpl*>(child.get());
    TORCH_CHECK(linear != nullptr, "cannot draw the parameters of a ", child->name(), " layer");
    const double bound = 1.0 / std::sqrt(static_cast<double>(linear->options.in_features()));
    for (torch::Tensor* param : {&linear->weight, &linear->bias}) {
      if (!param->defined()) continue;
      param->copy_((UniformTensor(stream, param->sizes()) * 2.0 - 1.0) * bound);
    }
  }
}

torch::nn::Sequential MakeMlp(int input, const std::vector<int>& hidden, int output, double slope,
                              bool activate_output) {
  torch::nn::Sequential net;
  int width = input;
  const auto leaky = torch::nn::LeakyReLUOptions().negative_slope(slope);
  for (int h : hidden) {
    net->push_back(torch::nn::Linear(width, h));
    net->push_back(torch::nn::LeakyReLU(leaky));
    width = h;
  }
  net->push_back(torch::nn::Linear(width, output));
  if (activate_output) net->push_back(torch::nn::LeakyReLU(leaky));
  return net;
}

GeneratorImpl::GeneratorImpl(const v1::ModelConfig& config, std::vector<OutputBlock> blocks,
                             int output_width, const std::vector<int>& tower_widths)
    : blocks_(std::move(blocks)),
      output_width_(output_width),
      shared_z_(config.z_dim()),
      private_z_(config.experimental().generator_private_z()),
      gumbel_(config.experimental().categorical_output() == v1::ExperimentalModelConfig::gumbel),
      tau_(config.experimental().gumbel_tau()) {
  const bool per_party =
      config.experimental().generator_towers() == v1::ExperimentalModelConfig::per_party;
  const std::vector<int> towers = per_party ? tower_widths : std::vector<int>{output_width};
  TORCH_CHECK(std::accumulate(towers.begin(), towers.end(), 0) == output_width,
              "generator towers must cover the ", output_width, " output columns");
  const bool batch_norm =
      config.experimental().generator_norm() == v1::ExperimentalModelConfig::batch;
  for (size_t k = 0; k < towers.size(); ++k) {
    torch::nn::Sequential body;
    int width = shared_z_ + private_z_;
    for (int h : config.generator_hidden()) {
      // A bias before BatchNorm is cancelled by the mean subtraction: its gradient is
      // pure rounding noise, which Adam would amplify into lr-sized random steps.
      body->push_back(torch::nn::Linear(torch::nn::LinearOptions(width, h).bias(!batch_norm)));
      if (batch_norm) body->push_back(torch::nn::BatchNorm1d(h));
      body->push_back(torch::nn::ReLU());
      width = h;
    }
    // A joint generator keeps its original module names (checkpoints stay readable).
    const std::string suffix = per_party ? std::to_string(k) : "";
    bodies_.push_back(register_module("body" + suffix, body));
    outs_.push_back(register_module("out" + suffix, torch::nn::Linear(width, towers[k])));
  }
}

torch::Tensor GeneratorImpl::Logits(const torch::Tensor& z) {
  if (bodies_.size() == 1) return outs_[0](bodies_[0]->forward(z));
  std::vector<torch::Tensor> logits;
  logits.reserve(bodies_.size());
  for (size_t k = 0; k < bodies_.size(); ++k) {
    const torch::Tensor input =
        private_z_ == 0
            ? z
            : torch::cat(
                  {z.narrow(1, 0, shared_z_),
                   z.narrow(1, shared_z_ + static_cast<int64_t>(k) * private_z_, private_z_)},
                  1);
    logits.push_back(outs_[k](bodies_[k]->forward(input)));
  }
  return torch::cat(logits, 1);
}

namespace {

torch::Tensor GumbelNoise(const torch::Tensor& like, at::Generator gen) {
  const torch::Tensor u = torch::rand(like.sizes(), gen, like.options());
  return -torch::log(-torch::log(u + 1e-20) + 1e-20);
}

}  // namespace

int64_t ParameterCount(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const torch::Tensor& p : module.parameters()) count += p.numel();
  return count;
}

void GeneratorImpl::ConditionBlock(int offset) {
  TORCH_CHECK(conditioned_ < 0, "the generator already conditions a block");
  for (size_t b = 0; b < blocks_.size(); ++b) {
    if (blocks_[b].offset == offset && blocks_[b].kind == BlockKind::kSoftmax)
      conditioned_ = static_cast<int>(b);
  }
  TORCH_CHECK(conditioned_ >= 0, "no categorical block starts at encoded column ", offset);
  condition_ =
      register_module("condition", torch::nn::Linear(output_width_, blocks_[conditioned_].width));
  // Zero: training starts from the unconditioned generator.
  torch::NoGradGuard no_grad;
  condition_->weight.zero_();
  condition_->bias.zero_();
}

torch::Tensor GeneratorImpl::ConditionedLogits(const torch::Tensor& logits,
                                               const torch::Tensor& row) {
  const OutputBlock& block = blocks_[conditioned_];
  return logits.narrow(1, block.offset, block.width) + condition_(row);
}

torch::Tensor GeneratorImpl::forward(const torch::Tensor& z, at::Generator gumbel) {
  const torch::Tensor logits = Logits(z);
  const torch::Tensor noise = gumbel_ ? GumbelNoise(logits, gumbel) : torch::Tensor();
  const auto relax = [&](const OutputBlock& block, const torch::Tensor& x) {
    if (!gumbel_) return torch::softmax(x, 1);
    return torch::softmax((x + noise.narrow(1, block.offset, block.width)) / tau_, 1);
  };
  std::vector<torch::Tensor> parts;
  parts.reserve(blocks_.size());
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const OutputBlock& block = blocks_[b];
    const torch::Tensor x = logits.narrow(1, block.offset, block.width);
    if (static_cast<int>(b) == conditioned_) {
      parts.push_back(torch::zeros_like(x));  // drawn below, from the rest of the row
    } else {
      parts.push_back(block.kind == BlockKind::kTanh ? torch::tanh(x) : relax(block, x));
    }
  }
  if (conditioned_ < 0) return torch::cat(parts, 1);
  parts[conditioned_] =
      relax(blocks_[conditioned_], ConditionedLogits(logits, torch::cat(parts, 1)));
  return torch::cat(parts, 1);
}

torch::Tensor GeneratorImpl::SampleHard(const torch::Tensor& z, at::Generator gen,
                                        const std::map<int, double>& temperature) {
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = Logits(z);
  const torch::Tensor noise = GumbelNoise(logits, gen);
  torch::Tensor out = torch::zeros_like(logits);
  const auto draw = [&](const OutputBlock& block, torch::Tensor x) {
    const auto t = temperature.find(block.offset);
    if (t != temperature.end()) x = x / t->second;
    const torch::Tensor choice =
        (torch::log_softmax(x, 1) + noise.narrow(1, block.offset, block.width)).argmax(1, true);
    out.narrow(1, block.offset, block.width).scatter_(1, choice, 1.0);
  };
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const OutputBlock& block = blocks_[b];
    const torch::Tensor x = logits.narrow(1, block.offset, block.width);
    if (block.kind == BlockKind::kTanh) {
      out.narrow(1, block.offset, 1).copy_(torch::tanh(x));
    } else if (static_cast<int>(b) !=
               conditioned_) {  // that one is drawn below, from the rest of the row
      draw(block, x);
    }
  }
  if (conditioned_ >= 0) draw(blocks_[conditioned_], ConditionedLogits(logits, out));
  return out;
}

FeatureNetImpl::FeatureNetImpl(int input_width, const v1::ModelConfig& config) {
  const std::vector<int> hidden(config.feature_hidden().begin(), config.feature_hidden().end());
  net_ = register_module("net", MakeMlp(input_width, hidden, config.feature_dim(),
                                        config.experimental().leaky_slope(), true));
}

ScoreNetImpl::ScoreNetImpl(int input_width, const std::vector<int>& hidden, double slope) {
  net_ = register_module("net", MakeMlp(input_width, hidden, 1, slope, false));
}

}  // namespace vfsynth
