#include "common/gan/label_pairs.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/random/random_tensors.h"

namespace vfsynth {

torch::Tensor RandomizedLabels(const torch::Tensor& one_hot, double epsilon, SecureRandom& noise) {
  const int64_t rows = one_hot.size(0);
  const int64_t k = one_hot.size(1);
  const torch::Tensor labels = one_hot.argmax(1);
  if (k < 2) return labels;
  const torch::Tensor keep = UniformTensor(noise, {rows}) < LabelKeepProbability(epsilon, k);
  // Another category uniformly: shift by 1 .. k − 1 around the circle.
  const torch::Tensor shift = UniformIntegers(noise, 1, k, rows);
  return torch::where(keep, labels, (labels + shift).remainder(k));
}

double LabelKeepProbability(double epsilon, int categories) {
  if (categories < 2) return 1.0;
  // e^ε / (e^ε + k − 1), written so that a large ε does not overflow.
  return 1.0 / (1.0 + (categories - 1) * std::exp(-epsilon));
}

std::string LabelsDigest(const std::vector<int32_t>& labels) {
  std::string bytes;
  bytes.reserve(labels.size() * 4);
  for (const int32_t label : labels) {
    const uint32_t value = static_cast<uint32_t>(label);
    for (int shift = 0; shift < 32; shift += 8)
      bytes.push_back(static_cast<char>((value >> shift) & 0xff));
  }
  return Sha256Builder().Add(bytes).Hex();
}

int64_t LabelPairCells(int categories, const std::vector<OutputBlock>& one_hot_blocks) {
  int64_t cells = 0;
  for (const OutputBlock& block : one_hot_blocks)
    cells += static_cast<int64_t>(categories) * block.width;
  return cells;
}

absl::StatusOr<torch::Tensor> LabelPairCounts(const torch::Tensor& labels, int categories,
                                              const torch::Tensor& table,
                                              const std::vector<OutputBlock>& one_hot_blocks,
                                              double noise_multiplier, SecureRandom* noise) {
  if (categories < 2)
    return absl::InvalidArgumentError(
        absl::StrCat("a label needs >= 2 categories, got ", categories));
  if (table.dim() != 2 || labels.dim() != 1 || labels.size(0) != table.size(0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("got ", labels.numel(), " labels for ", table.size(0), " records"));
  }
  if (labels.numel() > 0 &&
      (labels.min().item<int64_t>() < 0 || labels.max().item<int64_t>() >= categories)) {
    return absl::InvalidArgumentError(
        absl::StrCat("labels must be category indices in [0, ", categories, ")"));
  }
  if (one_hot_blocks.empty())
    return torch::zeros({0}, torch::kDouble);  // nothing to pair the label with
  const torch::Tensor label_rows =
      torch::one_hot(labels.to(torch::kLong), categories).to(torch::kDouble);
  std::vector<torch::Tensor> tables;
  for (const OutputBlock& block : one_hot_blocks) {
    if (block.offset < 0 || block.offset + block.width > table.size(1)) {
      return absl::InvalidArgumentError("a one-hot block does not fit the table");
    }
    tables.push_back(label_rows.t()
                         .mm(table.narrow(1, block.offset, block.width).to(torch::kDouble))
                         .reshape({-1}));
  }
  torch::Tensor counts = torch::cat(tables);
  if (noise != nullptr) {
    if (!(noise_multiplier > 0 && std::isfinite(noise_multiplier))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label-pair noise multiplier must be finite and > 0, got ", noise_multiplier));
    }
    const double sensitivity =
        HistogramReleaseSensitivity(static_cast<int64_t>(one_hot_blocks.size()));
    counts = counts + GaussianTensor(*noise, counts.sizes(), noise_multiplier * sensitivity);
  }
  return counts;
}

absl::StatusOr<torch::Tensor> LabelUnconfusion(double keep, int categories) {
  const int k = categories;
  if (k < 2) return absl::InvalidArgumentError("randomized response needs at least 2 categories");
  const double other = (1.0 - keep) / (k - 1);
  const double a = keep - other;
  if (!(a > 1e-9)) {
    return absl::InvalidArgumentError(
        absl::StrCat("keep probability ", keep, " leaves no information"));
  }
  return (torch::eye(k, torch::kDouble) -
          other / (a + k * other) * torch::ones({k, k}, torch::kDouble)) /
         a;
}

absl::StatusOr<MarginalTarget> LabelPairTarget(const std::vector<const TableEncoder*>& encoders,
                                               int holder, const OutputBlock& label,
                                               const std::vector<torch::Tensor>& counts,
                                               double label_epsilon, int64_t rows) {
  const int parties = static_cast<int>(encoders.size());
  if (holder < 0 || holder >= parties || static_cast<int>(counts.size()) != parties || rows < 1) {
    return absl::InvalidArgumentError(
        "label pairs need the holder, one release per party and records");
  }
  const int k = label.width;
  // Observed tables are the true ones with each row's label confused by randomized response.
  absl::StatusOr<torch::Tensor> unconfusion =
      LabelUnconfusion(LabelKeepProbability(label_epsilon, k), k);
  if (!unconfusion.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("label epsilon ", label_epsilon, " leaves no information in the labels"));
  }
  const torch::Tensor unconfuse = *std::move(unconfusion);
  std::vector<int> offsets;
  int offset = 0;
  for (const TableEncoder* encoder : encoders) {
    offsets.push_back(offset);
    offset += encoder->width();
  }
  OutputBlock global_label = label;
  global_label.offset += offsets[holder];
  std::vector<OutputBlock> blocks = {global_label};
  std::vector<std::pair<int, int>> pairs;
  std::vector<torch::Tensor> probabilities;
  for (int p = 0; p < parties; ++p) {
    if (p == holder) continue;
    const std::vector<OutputBlock> own = OneHotBlocks(encoders[p]->blocks());
    const torch::Tensor released = counts[p].to(torch::kDouble).reshape({-1});
    if (released.numel() != LabelPairCells(k, own)) {
      return absl::InvalidArgumentError(absl::StrCat("party ", p, " released ", released.numel(),
                                                     " label-pair counts; its blocks need ",
                                                     LabelPairCells(k, own)));
    }
    if (!released.isfinite().all().item<bool>()) {
      return absl::InvalidArgumentError(
          absl::StrCat("party ", p, "'s label-pair counts are not finite"));
    }
    int64_t at = 0;
    for (OutputBlock block : own) {
      const torch::Tensor observed =
          released.narrow(0, at, static_cast<int64_t>(k) * block.width).reshape({k, block.width});
      at += static_cast<int64_t>(k) * block.width;
      const torch::Tensor table = unconfuse.mm(observed).reshape({-1});
      probabilities.push_back(ProjectToTotal(table, static_cast<double>(rows)) /
                              static_cast<double>(rows));
      block.offset += offsets[p];
      if (block.position_offset >= 0) block.position_offset += offsets[p];
      pairs.emplace_back(0, static_cast<int>(blocks.size()));
      blocks.push_back(block);
    }
  }
  if (pairs.empty())
    return absl::InvalidArgumentError("no party besides the label's holder has a one-hot block");
  return MarginalTarget::FromPairProbabilities(std::move(blocks), std::move(pairs),
                                               torch::cat(probabilities));
}

}  // namespace vfsynth
