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

absl::Status CheckBlocksFit(const std::vector<OutputBlock>& blocks, int64_t columns) {
  for (const OutputBlock& block : blocks) {
    const bool fits = block.offset >= 0 && block.width >= 1 && block.offset + block.width <= columns &&
                      block.position_offset < columns && block.position_slots <= block.width;
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat("one-hot block at column ", block.offset, " (width ",
                                                     block.width, ") does not fit ", columns, " columns"));
    }
  }
  return absl::OkStatus();
}

// A refined block's cells: each bin slot times each position part (rows x slots x parts,
// flattened), then the slots without a position (missing) as they are.
torch::Tensor RefineByPosition(const torch::Tensor& one_hot, const torch::Tensor& parts, const OutputBlock& block) {
  const int64_t slots = block.position_slots;
  const torch::Tensor refined =
      (one_hot.narrow(1, 0, slots).unsqueeze(2) * parts.unsqueeze(1)).reshape({one_hot.size(0), -1});
  return torch::cat({refined, one_hot.narrow(1, slots, block.width - slots)}, 1);
}

}  // namespace

MarginalTarget::MarginalTarget(std::vector<OutputBlock> blocks, int position_bins, torch::Tensor probabilities)
    : blocks_(std::move(blocks)), position_bins_(position_bins), probabilities_(std::move(probabilities)) {}

int64_t MarginalTarget::Cells(const OutputBlock& block) const {
  if (position_bins_ <= 1 || block.position_offset < 0) return block.width;
  return static_cast<int64_t>(block.position_slots) * position_bins_ + (block.width - block.position_slots);
}

torch::Tensor MarginalTarget::HardCells(const torch::Tensor& table, const OutputBlock& block) const {
  const torch::Tensor one_hot = table.narrow(1, block.offset, block.width).to(torch::kDouble);
  if (Cells(block) == block.width) return one_hot;
  const torch::Tensor position = table.select(1, block.position_offset).to(torch::kDouble);
  const torch::Tensor part =
      ((position + 1) * 0.5 * position_bins_).floor().clamp(0, position_bins_ - 1).to(torch::kLong);
  return RefineByPosition(one_hot, torch::one_hot(part, position_bins_).to(torch::kDouble), block);
}

torch::Tensor MarginalTarget::SoftCells(const torch::Tensor& slice, const OutputBlock& block) const {
  const torch::Tensor one_hot = slice.narrow(1, block.offset, block.width);
  if (Cells(block) == block.width) return one_hot;
  const int64_t rows = slice.size(0);
  // Membership of part s: σ((x − e_s)/h) − σ((x − e_{s+1})/h) over the inner edges e_s,
  // with σ = 1 below the first part and 0 above the last: the parts sum to 1 per row.
  const double width = 2.0 / position_bins_;
  const torch::Tensor edges = torch::arange(1, position_bins_, slice.options()) * width - 1.0;
  const torch::Tensor position = slice.narrow(1, block.position_offset, 1);
  const torch::Tensor above = torch::sigmoid((position - edges) / (0.1 * width));
  const torch::Tensor lower = torch::cat({torch::ones({rows, 1}, slice.options()), above}, 1);
  const torch::Tensor upper = torch::cat({above, torch::zeros({rows, 1}, slice.options())}, 1);
  return RefineByPosition(one_hot, lower - upper, block);
}

absl::StatusOr<MarginalTarget> MarginalTarget::FromTable(const torch::Tensor& table,
                                                         const std::vector<OutputBlock>& blocks,
                                                         int position_bins, double noise_multiplier,
                                                         std::optional<at::Generator> noise) {
  const std::vector<OutputBlock> one_hot = OneHotBlocks(blocks);
  if (table.dim() != 2 || table.size(0) < 1) {
    return absl::InvalidArgumentError("marginals need a non-empty 2-D table");
  }
  if (position_bins < 1) return absl::InvalidArgumentError("position_bins must be >= 1");
  RETURN_IF_ERROR(CheckBlocksFit(one_hot, table.size(1)));
  if (noise.has_value() && !(noise_multiplier > 0 && std::isfinite(noise_multiplier))) {
    return absl::InvalidArgumentError(
        absl::StrCat("marginal noise multiplier must be finite and > 0, got ", noise_multiplier));
  }
  const MarginalTarget shape(one_hot, position_bins, torch::Tensor());
  const double sensitivity = std::sqrt(2.0 * static_cast<double>(one_hot.size()));
  std::vector<torch::Tensor> probabilities;
  for (const OutputBlock& block : one_hot) {
    torch::Tensor counts = shape.HardCells(table, block).sum(0);
    if (noise.has_value()) {
      counts = counts + torch::randn(counts.sizes(), *noise, counts.options()) * (noise_multiplier * sensitivity);
    }
    counts = counts.clamp_min(0);
    const double total = counts.sum().item<double>();
    const int64_t cells = counts.size(0);
    probabilities.push_back(total > 0 ? counts / total : torch::full({cells}, 1.0 / cells, torch::kDouble));
  }
  return MarginalTarget(one_hot, position_bins,
                        probabilities.empty() ? torch::zeros({0}, torch::kDouble) : torch::cat(probabilities));
}

absl::StatusOr<MarginalTarget> MarginalTarget::WithProbabilities(const torch::Tensor& probabilities) const {
  int64_t cells = 0;
  for (const OutputBlock& block : blocks_) cells += Cells(block);
  if (probabilities.dim() != 1 || probabilities.size(0) != cells) {
    return absl::InvalidArgumentError(absl::StrCat("saved marginals have ", probabilities.numel(),
                                                   " values; this party's one-hot blocks need ", cells));
  }
  const torch::Tensor p = probabilities.to(torch::kDouble);
  int64_t at = 0;
  for (const OutputBlock& block : blocks_) {
    const torch::Tensor part = p.narrow(0, at, Cells(block));
    at += Cells(block);
    const bool valid = part.isfinite().all().item<bool>() && part.min().item<double>() >= 0 &&
                       std::abs(part.sum().item<double>() - 1.0) < 1e-6;
    if (!valid) return absl::InvalidArgumentError("saved marginals are not probability vectors");
  }
  return MarginalTarget(blocks_, position_bins_, p.clone());
}

torch::Tensor MarginalTarget::Loss(const torch::Tensor& slice) const {
  torch::Tensor loss = torch::zeros({}, slice.options());
  int64_t at = 0;
  for (const OutputBlock& block : blocks_) {
    const int64_t cells = Cells(block);
    const torch::Tensor target = probabilities_.narrow(0, at, cells).to(slice.scalar_type());
    at += cells;
    // The floor keeps log finite where a cell's batch mean underflows; where the target
    // is 0 the term is 0 either way.
    const torch::Tensor batch = SoftCells(slice, block).mean(0).clamp_min(1e-12);
    loss = loss + (torch::xlogy(target, target) - target * torch::log(batch)).sum();
  }
  return loss;
}

}  // namespace vfsynth
