#include "common/gan/marginal_target.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/random/random_tensors.h"

namespace vfsynth {

torch::Tensor ProjectToTotal(const torch::Tensor& counts, double total) {
  // The shift τ: with the counts sorted descending, the largest j whose count stays
  // positive after subtracting (sum of the top j − total) / j (Duchi et al. 2008).
  const torch::Tensor sorted = std::get<0>(counts.sort(/*dim=*/0, /*descending=*/true));
  const torch::Tensor ranks = torch::arange(1, counts.size(0) + 1, counts.options());
  const torch::Tensor shifts = (sorted.cumsum(0) - total) / ranks;
  const int64_t kept = (sorted - shifts > 0).nonzero().max().item<int64_t>();
  return (counts - shifts[kept]).clamp_min(0);
}

double HistogramReleaseSensitivity(int64_t histograms) {
  return std::sqrt(2.0 * static_cast<double>(histograms));
}

std::vector<int> PairGroups(int width, int bins, int groups) {
  std::vector<int> cells(width);
  const int runs = std::min(bins, std::max(groups, 1));
  for (int slot = 0; slot < width; ++slot) {
    cells[slot] = slot < bins ? static_cast<int>(static_cast<int64_t>(slot) * runs / bins)
                              : runs + (slot - bins);
  }
  return cells;
}

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
    const bool fits = block.offset >= 0 && block.width >= 1 &&
                      block.offset + block.width <= columns && block.position_offset < columns &&
                      block.position_slots <= block.width;
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat("one-hot block at column ", block.offset,
                                                     " (width ", block.width, ") does not fit ",
                                                     columns, " columns"));
    }
  }
  return absl::OkStatus();
}

// A refined block's cells: each bin slot times each position part (rows x slots x parts,
// flattened), then the slots without a position (missing) as they are.
torch::Tensor RefineByPosition(const torch::Tensor& one_hot, const torch::Tensor& parts,
                               const OutputBlock& block) {
  const int64_t slots = block.position_slots;
  const torch::Tensor refined = (one_hot.narrow(1, 0, slots).unsqueeze(2) * parts.unsqueeze(1))
                                    .reshape({one_hot.size(0), -1});
  return torch::cat({refined, one_hot.narrow(1, slots, block.width - slots)}, 1);
}

// Within-party pairs of one-hot blocks with at most `pair_cells` joint cells, in order.
std::vector<std::pair<int, int>> SelectPairs(const std::vector<OutputBlock>& blocks,
                                             int pair_cells) {
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < static_cast<int>(blocks.size()); ++i) {
    for (int j = i + 1; j < static_cast<int>(blocks.size()); ++j) {
      if (static_cast<int64_t>(blocks[i].width) * blocks[j].width <= pair_cells)
        pairs.emplace_back(i, j);
    }
  }
  return pairs;
}

}  // namespace

MarginalTarget::MarginalTarget(std::vector<OutputBlock> blocks, std::vector<Pair> pairs,
                               int position_bins, torch::Tensor probabilities)
    : blocks_(std::move(blocks)),
      pairs_(std::move(pairs)),
      position_bins_(position_bins),
      probabilities_(std::move(probabilities)) {}

MarginalTarget MarginalTarget::ShapeOf(const std::vector<OutputBlock>& one_hot,
                                       const MarginalOptions& options) {
  return MarginalTarget(one_hot, SelectPairs(one_hot, options.pair_cells), options.position_bins,
                        torch::Tensor());
}

int64_t MarginalTarget::Cells(const OutputBlock& block) const {
  if (position_bins_ <= 1 || block.position_offset < 0) return block.width;
  return static_cast<int64_t>(block.position_slots) * position_bins_ +
         (block.width - block.position_slots);
}

std::vector<int64_t> MarginalTarget::HistogramSizes() const {
  std::vector<int64_t> sizes;
  if (one_way_) {
    for (const OutputBlock& block : blocks_) sizes.push_back(Cells(block));
  }
  for (size_t p = 0; p < pairs_.size(); ++p) {
    sizes.push_back(PairWidth(pairs_[p].first, Unmerged(p)) *
                    PairWidth(pairs_[p].second, Unmerged(p)));
  }
  return sizes;
}

int64_t MarginalTarget::PairWidth(int block, bool unmerged) const {
  if (unmerged || pair_maps_.empty() || !pair_maps_[block].defined()) return blocks_[block].width;
  return pair_maps_[block].size(1);
}

torch::Tensor MarginalTarget::PairColumns(const torch::Tensor& rows, int block, bool hard,
                                          bool unmerged) const {
  torch::Tensor columns = rows.narrow(1, blocks_[block].offset, blocks_[block].width);
  if (hard) columns = columns.to(torch::kDouble);
  if (unmerged || pair_maps_.empty() || !pair_maps_[block].defined()) return columns;
  return columns.mm(pair_maps_[block].to(columns.scalar_type()));
}

torch::Tensor MarginalTarget::HardCells(const torch::Tensor& table,
                                        const OutputBlock& block) const {
  const torch::Tensor one_hot = table.narrow(1, block.offset, block.width).to(torch::kDouble);
  if (Cells(block) == block.width) return one_hot;
  const torch::Tensor position = table.select(1, block.position_offset).to(torch::kDouble);
  const torch::Tensor part =
      ((position + 1) * 0.5 * position_bins_).floor().clamp(0, position_bins_ - 1).to(torch::kLong);
  return RefineByPosition(one_hot, torch::one_hot(part, position_bins_).to(torch::kDouble), block);
}

torch::Tensor MarginalTarget::SoftCells(const torch::Tensor& slice,
                                        const OutputBlock& block) const {
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

std::vector<torch::Tensor> MarginalTarget::Histograms(const torch::Tensor& rows, bool hard) const {
  // Hard histograms are counts, which add over row chunks: a large table never needs its
  // per-row cells (float64, a column per cell) all at once.
  constexpr int64_t kHardChunkRows = 65536;
  if (hard && rows.size(0) > kHardChunkRows) {
    std::vector<torch::Tensor> total;
    for (int64_t start = 0; start < rows.size(0); start += kHardChunkRows) {
      std::vector<torch::Tensor> part =
          Histograms(rows.narrow(0, start, std::min(kHardChunkRows, rows.size(0) - start)), true);
      if (total.empty()) {
        total = std::move(part);
      } else {
        for (size_t h = 0; h < total.size(); ++h) total[h] += part[h];
      }
    }
    return total;
  }
  std::vector<torch::Tensor> histograms;
  if (one_way_) {
    for (const OutputBlock& block : blocks_) {
      histograms.push_back(hard ? HardCells(rows, block).sum(0) : SoftCells(rows, block).mean(0));
    }
  }
  // A pair's joint histogram: the sum (mean) over rows of the outer product of the two
  // blocks' one-hot (relaxed) rows.
  for (size_t p = 0; p < pairs_.size(); ++p) {
    const auto& [a, b] = pairs_[p];
    const torch::Tensor joint = PairColumns(rows, a, hard, Unmerged(p))
                                    .t()
                                    .mm(PairColumns(rows, b, hard, Unmerged(p)))
                                    .reshape({-1});
    histograms.push_back(hard ? joint : joint / static_cast<double>(rows.size(0)));
  }
  return histograms;
}

absl::StatusOr<MarginalTarget> MarginalTarget::FromTable(const torch::Tensor& table,
                                                         const std::vector<OutputBlock>& blocks,
                                                         const MarginalOptions& options,
                                                         double noise_multiplier,
                                                         SecureRandom* noise) {
  const std::vector<OutputBlock> one_hot = OneHotBlocks(blocks);
  if (table.dim() != 2 || table.size(0) < 1) {
    return absl::InvalidArgumentError("marginals need a non-empty 2-D table");
  }
  if (options.position_bins < 1) return absl::InvalidArgumentError("position_bins must be >= 1");
  if (options.pair_cells < 0) return absl::InvalidArgumentError("pair_cells must be >= 0");
  RETURN_IF_ERROR(CheckBlocksFit(one_hot, table.size(1)));
  if (noise != nullptr && !(noise_multiplier > 0 && std::isfinite(noise_multiplier))) {
    return absl::InvalidArgumentError(
        absl::StrCat("marginal noise multiplier must be finite and > 0, got ", noise_multiplier));
  }
  const MarginalTarget shape = ShapeOf(one_hot, options);
  std::vector<torch::Tensor> histograms = shape.Histograms(table, /*hard=*/true);
  const double sensitivity = HistogramReleaseSensitivity(static_cast<int64_t>(histograms.size()));
  const double rows = static_cast<double>(table.size(0));
  for (torch::Tensor& counts : histograms) {
    if (noise != nullptr) {
      counts = counts + GaussianTensor(*noise, counts.sizes(), noise_multiplier * sensitivity);
    }
    counts = ProjectToTotal(counts, rows) / rows;
  }
  return MarginalTarget(
      shape.blocks_, shape.pairs_, options.position_bins,
      histograms.empty() ? torch::zeros({0}, torch::kDouble) : torch::cat(histograms));
}

absl::StatusOr<MarginalTarget> MarginalTarget::FromRelease(const std::vector<OutputBlock>& blocks,
                                                           const MarginalOptions& options,
                                                           const torch::Tensor& probabilities) {
  if (options.position_bins < 1 || options.pair_cells < 0) {
    return absl::InvalidArgumentError("position_bins must be >= 1 and pair_cells >= 0");
  }
  const std::vector<OutputBlock> one_hot = OneHotBlocks(blocks);
  const MarginalTarget shape = ShapeOf(one_hot, options);
  return shape.WithProbabilities(probabilities);
}

int64_t MarginalTarget::ReleaseCells(const std::vector<OutputBlock>& blocks,
                                     const MarginalOptions& options) {
  if (options.position_bins < 1 || options.pair_cells < 0) return 0;
  const std::vector<OutputBlock> one_hot = OneHotBlocks(blocks);
  const MarginalTarget shape = ShapeOf(one_hot, options);
  int64_t cells = 0;
  for (const int64_t size : shape.HistogramSizes()) cells += size;
  return cells;
}

torch::Tensor MarginalTarget::TableProbabilities(const torch::Tensor& table) const {
  const double rows = static_cast<double>(std::max<int64_t>(table.size(0), 1));
  return TableCounts(table) / rows;
}

torch::Tensor MarginalTarget::TableCounts(const torch::Tensor& table) const {
  std::vector<torch::Tensor> histograms = Histograms(table, /*hard=*/true);
  if (histograms.empty()) return torch::zeros({0}, torch::kDouble);
  return torch::cat(histograms).to(torch::kDouble);
}

absl::StatusOr<MarginalTarget> MarginalTarget::FromPairProbabilities(
    std::vector<OutputBlock> blocks, std::vector<std::pair<int, int>> pairs,
    const torch::Tensor& probabilities) {
  ASSIGN_OR_RETURN(MarginalTarget shape, OfHistograms(std::move(blocks), std::move(pairs), 1));
  shape.one_way_ = false;
  return shape.WithProbabilities(probabilities);
}

absl::StatusOr<MarginalTarget> MarginalTarget::OfHistograms(std::vector<OutputBlock> blocks,
                                                            std::vector<std::pair<int, int>> pairs,
                                                            int position_bins,
                                                            const std::vector<int>& pair_groups,
                                                            const std::vector<bool>& unmerged_pairs) {
  if (position_bins < 1) return absl::InvalidArgumentError("position_bins must be >= 1");
  if (!unmerged_pairs.empty() && unmerged_pairs.size() != pairs.size()) {
    return absl::InvalidArgumentError("unmerged_pairs must have one flag per pair");
  }
  if (!pair_groups.empty() && pair_groups.size() != blocks.size()) {
    return absl::InvalidArgumentError(absl::StrCat("pair groups for ", pair_groups.size(),
                                                   " blocks, but there are ", blocks.size()));
  }
  std::vector<torch::Tensor> maps(pair_groups.empty() ? 0 : blocks.size());
  for (size_t b = 0; b < pair_groups.size(); ++b) {
    const int bins = blocks[b].position_offset >= 0 ? blocks[b].position_slots : 0;
    if (pair_groups[b] <= 0 || bins <= pair_groups[b]) continue;
    const std::vector<int> cells = PairGroups(blocks[b].width, bins, pair_groups[b]);
    const int64_t width = cells.back() + 1;
    maps[b] = torch::zeros({blocks[b].width, width}, torch::kDouble);
    for (int slot = 0; slot < blocks[b].width; ++slot) maps[b][slot][cells[slot]] = 1.0;
  }
  for (const auto& [a, b] : pairs) {
    const int n = static_cast<int>(blocks.size());
    if (a < 0 || a >= n || b < 0 || b >= n || a == b) {
      return absl::InvalidArgumentError(
          absl::StrCat("pair (", a, ", ", b, ") is not two of ", n, " blocks"));
    }
  }
  MarginalTarget shape(std::move(blocks), std::move(pairs), position_bins, torch::Tensor());
  shape.pair_maps_ = std::move(maps);
  shape.unmerged_ = unmerged_pairs;
  return shape;
}

absl::StatusOr<MarginalTarget> MarginalTarget::WithProbabilities(
    const torch::Tensor& probabilities) const {
  const std::vector<int64_t> sizes = HistogramSizes();
  int64_t cells = 0;
  for (const int64_t size : sizes) cells += size;
  if (probabilities.dim() != 1 || probabilities.size(0) != cells) {
    return absl::InvalidArgumentError(
        absl::StrCat("saved marginals have ", probabilities.numel(),
                     " values; this party's marginal histograms need ", cells));
  }
  const torch::Tensor p = probabilities.to(torch::kDouble);
  int64_t at = 0;
  for (const int64_t size : sizes) {
    const torch::Tensor part = p.narrow(0, at, size);
    at += size;
    const bool valid = part.isfinite().all().item<bool>() && part.min().item<double>() >= 0 &&
                       std::abs(part.sum().item<double>() - 1.0) < 1e-6;
    if (!valid) return absl::InvalidArgumentError("saved marginals are not probability vectors");
  }
  MarginalTarget target(blocks_, pairs_, position_bins_, p.clone());
  target.one_way_ = one_way_;
  target.pair_maps_ = pair_maps_;
  target.unmerged_ = unmerged_;
  return target;
}

torch::Tensor MarginalTarget::CommonMap(int block, int kind) const {
  const OutputBlock& b = blocks_[block];
  const bool merged = !pair_maps_.empty() && pair_maps_[block].defined();
  // width x groups: each slot's common group (its merged run, or itself).
  const torch::Tensor slots = merged ? pair_maps_[block] : torch::eye(b.width, torch::kDouble);
  if (kind == 1) return torch::eye(slots.size(1), torch::kDouble);
  if (kind == 2) return slots;
  const int64_t cells = Cells(b);
  if (cells == b.width) return slots;
  // Refined cells: slot s, part q at s * parts + q for the bin slots, then missing slots.
  std::vector<int64_t> slot_of(cells);
  const int64_t refined = static_cast<int64_t>(b.position_slots) * position_bins_;
  for (int64_t c = 0; c < cells; ++c) {
    slot_of[c] = c < refined ? c / position_bins_ : b.position_slots + (c - refined);
  }
  return slots.index_select(0, torch::tensor(slot_of, torch::kLong));
}

std::vector<torch::Tensor> MarginalTarget::ConsistentCounts(std::vector<torch::Tensor> counts,
                                                            const std::vector<double>& variances,
                                                            double total, int rounds) const {
  // Each histogram's view of each of its blocks: (histogram, block, axis, map).
  struct View {
    size_t histogram;
    int axis;  // 1-way: 0; pair: 0 (rows, first block) or 1 (columns)
    torch::Tensor map;
  };
  std::vector<std::vector<View>> views(blocks_.size());
  std::vector<std::pair<int64_t, int64_t>> grid(counts.size());  // pair tables' rows x columns
  size_t k = 0;
  if (one_way_) {
    for (int b = 0; b < static_cast<int>(blocks_.size()); ++b, ++k) {
      views[b].push_back({k, 0, CommonMap(b, 0)});
      grid[k] = {counts[k].size(0), 1};
    }
  }
  for (size_t p = 0; p < pairs_.size(); ++p, ++k) {
    const auto& [a, b] = pairs_[p];
    const int kind = Unmerged(p) ? 2 : 1;
    views[a].push_back({k, 0, CommonMap(a, kind)});
    views[b].push_back({k, 1, CommonMap(b, kind)});
    grid[k] = {PairWidth(a, Unmerged(p)), PairWidth(b, Unmerged(p))};
  }
  auto margin = [&](const View& v) {  // cells of the block's axis, summed over the other
    const torch::Tensor table = counts[v.histogram].reshape({grid[v.histogram].first,
                                                             grid[v.histogram].second});
    return table.sum(1 - v.axis);
  };
  for (int round = 0; round < rounds; ++round) {
    for (torch::Tensor& c : counts) c = c + (total - c.sum().item<double>()) / c.size(0);
    for (size_t b = 0; b < blocks_.size(); ++b) {
      if (views[b].size() < 2) continue;
      // Per view: its margin in common groups and each group's variance (cells summed).
      torch::Tensor weighted, weights;
      std::vector<torch::Tensor> margins, spans;
      for (const View& v : views[b]) {
        const int64_t other = v.axis == 0 ? grid[v.histogram].second : grid[v.histogram].first;
        const torch::Tensor span = v.map.sum(0) * static_cast<double>(other);  // cells per group
        const torch::Tensor m = margin(v).matmul(v.map);
        const torch::Tensor w = 1.0 / (span * variances[v.histogram]);
        weighted = weighted.defined() ? weighted + w * m : w * m;
        weights = weights.defined() ? weights + w : w;
        margins.push_back(m);
        spans.push_back(span);
      }
      const torch::Tensor common = weighted / weights;
      for (size_t i = 0; i < views[b].size(); ++i) {
        const View& v = views[b][i];
        // Per cell of the axis, its group's difference over the group's cells.
        const torch::Tensor add = v.map.matmul((common - margins[i]) / spans[i]);
        const auto [rows, cols] = grid[v.histogram];
        torch::Tensor table = counts[v.histogram].reshape({rows, cols});
        table = v.axis == 0 ? table + add.unsqueeze(1) : table + add.unsqueeze(0);
        counts[v.histogram] = table.reshape({-1});
      }
    }
    for (torch::Tensor& c : counts) c = ProjectToTotal(c, total);
  }
  return counts;
}

torch::Tensor MarginalTarget::Loss(const torch::Tensor& slice, double reverse_weight) const {
  torch::Tensor loss = torch::zeros({}, slice.options());
  int64_t at = 0;
  for (const torch::Tensor& histogram : Histograms(slice, /*hard=*/false)) {
    const int64_t cells = histogram.size(0);
    const torch::Tensor target = probabilities_.narrow(0, at, cells).to(slice.scalar_type());
    at += cells;
    // The floor keeps log finite where a cell's batch mean underflows; where the target
    // is 0 the term is 0 either way.
    const torch::Tensor batch = histogram.clamp_min(1e-12);
    loss = loss + (torch::xlogy(target, target) - target * torch::log(batch)).sum();
    if (reverse_weight > 0) {
      const double scale = 1.0 / (1.0 + kReverseFloor * static_cast<double>(cells));
      const torch::Tensor smoothed_batch = (histogram + kReverseFloor) * scale;
      const torch::Tensor smoothed_target = (target + kReverseFloor) * scale;
      loss =
          loss +
          reverse_weight *
              (smoothed_batch * (torch::log(smoothed_batch) - torch::log(smoothed_target))).sum();
    }
  }
  return loss;
}

}  // namespace vfsynth
