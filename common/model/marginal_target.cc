#include "common/model/marginal_target.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/util/status_macros.h"

namespace vfsynth {

std::vector<OutputBlock> OneHotBlocks(const std::vector<OutputBlock>& blocks) {
  std::vector<OutputBlock> one_hot;
  for (const OutputBlock& block : blocks) {
    if (block.kind == BlockKind::kSoftmax) one_hot.push_back(block);
  }
  return one_hot;
}

namespace {

int64_t TotalWidth(const std::vector<OutputBlock>& blocks) {
  int64_t width = 0;
  for (const OutputBlock& block : blocks) width += block.width;
  return width;
}

absl::Status CheckBlocksFit(const std::vector<OutputBlock>& blocks, int64_t columns) {
  for (const OutputBlock& block : blocks) {
    if (block.offset < 0 || block.width < 1 || block.offset + block.width > columns) {
      return absl::InvalidArgumentError(absl::StrCat("one-hot block at column ", block.offset, " (width ",
                                                     block.width, ") does not fit ", columns, " columns"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

MarginalTarget::MarginalTarget(std::vector<OutputBlock> blocks, torch::Tensor probabilities)
    : blocks_(std::move(blocks)), probabilities_(std::move(probabilities)) {}

absl::StatusOr<MarginalTarget> MarginalTarget::FromTable(const torch::Tensor& table,
                                                         const std::vector<OutputBlock>& blocks,
                                                         double noise_multiplier,
                                                         std::optional<at::Generator> noise) {
  const std::vector<OutputBlock> one_hot = OneHotBlocks(blocks);
  if (table.dim() != 2 || table.size(0) < 1) {
    return absl::InvalidArgumentError("marginals need a non-empty 2-D table");
  }
  RETURN_IF_ERROR(CheckBlocksFit(one_hot, table.size(1)));
  if (noise.has_value() && !(noise_multiplier > 0 && std::isfinite(noise_multiplier))) {
    return absl::InvalidArgumentError(
        absl::StrCat("marginal noise multiplier must be finite and > 0, got ", noise_multiplier));
  }
  const double sensitivity = std::sqrt(2.0 * static_cast<double>(one_hot.size()));
  std::vector<torch::Tensor> probabilities;
  for (const OutputBlock& block : one_hot) {
    torch::Tensor counts = table.narrow(1, block.offset, block.width).to(torch::kDouble).sum(0);
    if (noise.has_value()) {
      counts = counts + torch::randn(counts.sizes(), *noise, counts.options()) * (noise_multiplier * sensitivity);
    }
    counts = counts.clamp_min(0);
    const double total = counts.sum().item<double>();
    probabilities.push_back(total > 0 ? counts / total
                                      : torch::full({block.width}, 1.0 / block.width, torch::kDouble));
  }
  return MarginalTarget(one_hot, probabilities.empty() ? torch::zeros({0}, torch::kDouble)
                                                      : torch::cat(probabilities));
}

absl::StatusOr<MarginalTarget> MarginalTarget::WithProbabilities(const torch::Tensor& probabilities) const {
  if (probabilities.dim() != 1 || probabilities.size(0) != TotalWidth(blocks_)) {
    return absl::InvalidArgumentError(absl::StrCat("saved marginals have ", probabilities.numel(),
                                                   " values; this party's one-hot blocks need ",
                                                   TotalWidth(blocks_)));
  }
  const torch::Tensor p = probabilities.to(torch::kDouble);
  int64_t at = 0;
  for (const OutputBlock& block : blocks_) {
    const torch::Tensor part = p.narrow(0, at, block.width);
    at += block.width;
    const bool valid = part.isfinite().all().item<bool>() && part.min().item<double>() >= 0 &&
                       std::abs(part.sum().item<double>() - 1.0) < 1e-6;
    if (!valid) return absl::InvalidArgumentError("saved marginals are not probability vectors");
  }
  return MarginalTarget(blocks_, p.clone());
}

torch::Tensor MarginalTarget::Loss(const torch::Tensor& slice) const {
  torch::Tensor loss = torch::zeros({}, slice.options());
  int64_t at = 0;
  for (const OutputBlock& block : blocks_) {
    const torch::Tensor target = probabilities_.narrow(0, at, block.width).to(slice.scalar_type());
    at += block.width;
    // The floor keeps log finite where a category's batch mean underflows; where the
    // target is 0 the term is 0 either way.
    const torch::Tensor batch_mean = slice.narrow(1, block.offset, block.width).mean(0).clamp_min(1e-12);
    const torch::Tensor entropy_part = torch::xlogy(target, target);
    loss = loss + (entropy_part - target * torch::log(batch_mean)).sum();
  }
  return loss;
}

}  // namespace vfsynth
