#include "common/marginals/central_measurement.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/random/random_tensors.h"

namespace vfsynth::marginals {

namespace {

// Bins of a block with a position (a numeric column's grid); 0 for a categorical block.
int Bins(const OutputBlock& block) {
  return block.position_offset >= 0 ? block.position_slots : 0;
}

}  // namespace

MeasuredLayout LayoutOf(const std::vector<const TableEncoder*>& encoders,
                        const std::string& label_column, const v1::MeasurementConfig& settings) {
  MeasuredLayout layout;
  int offset = 0;
  for (int party = 0; party < static_cast<int>(encoders.size()); ++party) {
    for (OutputBlock block : OneHotBlocks(encoders[party]->blocks())) {
      v1::PlannedColumn column;
      column.set_party(party);
      column.set_name(encoders[party]->BlockName(block));
      column.set_width(block.width);
      const int bins = Bins(block);
      column.set_cells(bins * settings.position_bins() + (block.width - bins));
      column.set_label(!label_column.empty() && column.name() == label_column);
      column.set_pair_width(
          bins > settings.pair_bins()
              ? PairGroups(block.width, bins, settings.pair_bins()).back() + 1
              : block.width);
      block.offset += offset;
      if (block.position_offset >= 0) block.position_offset += offset;
      layout.columns.push_back(std::move(column));
      layout.blocks.push_back(block);
    }
    offset += encoders[party]->width();
  }
  return layout;
}

absl::StatusOr<MarginalTarget> ReleaseShape(const std::vector<OutputBlock>& blocks,
                                            const v1::PrivacyPlan& plan,
                                            bool label_pairs_unmerged) {
  const int columns = static_cast<int>(blocks.size());
  if (plan.columns_size() != columns) {
    return absl::InvalidArgumentError(absl::StrCat("the plan lists ", plan.columns_size(),
                                                   " columns; the parties' schemas have ",
                                                   columns));
  }
  std::vector<std::pair<int, int>> pairs;
  std::vector<bool> unmerged;
  for (int k = 0; k < plan.measurements_size(); ++k) {
    const auto& c = plan.measurements(k).columns();
    if (k < columns) {
      if (c.size() != 1 || c[0] != k) {
        return absl::InvalidArgumentError(
            absl::StrCat("measurement ", k, " must be column ", k, "'s 1-way histogram"));
      }
      continue;
    }
    if (c.size() != 2 || c[0] < 0 || c[0] >= c[1] || c[1] >= columns) {
      return absl::InvalidArgumentError(
          absl::StrCat("measurement ", k, " must be a pair of columns in ascending order"));
    }
    pairs.emplace_back(c[0], c[1]);
    unmerged.push_back(label_pairs_unmerged &&
                       (plan.columns(c[0]).label() || plan.columns(c[1]).label()));
  }
  if (plan.measurements_size() < columns) {
    return absl::InvalidArgumentError(absl::StrCat("the plan measures ",
                                                   plan.measurements_size(),
                                                   " histograms, fewer than its ", columns,
                                                   " columns' 1-way ones"));
  }
  const v1::MeasurementConfig& settings = plan.privacy().measurement();
  std::vector<int> groups;
  for (const OutputBlock& block : blocks) groups.push_back(Bins(block) > 0 ? settings.pair_bins() : 0);
  return MarginalTarget::OfHistograms(blocks, std::move(pairs), settings.position_bins(), groups,
                                      unmerged);
}

std::vector<double> ReleaseVariances(const v1::PrivacyPlan& plan) {
  std::vector<double> variances;
  for (const v1::MeasuredHistogram& m : plan.measurements()) {
    variances.push_back(m.sigma() * m.sigma() * (m.cross_party() ? 2.0 : 1.0));
  }
  return variances;
}

absl::StatusOr<MarginalTarget> TargetFromCounts(const MarginalTarget& shape,
                                                const std::vector<torch::Tensor>& input,
                                                int64_t rows,
                                                const std::vector<double>& variances,
                                                int consistency_rounds) {
  std::vector<torch::Tensor> counts = input;
  const std::vector<int64_t> sizes = shape.HistogramSizes();
  if (counts.size() != sizes.size() || rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat("got ", counts.size(), " histograms of ", rows,
                                                   " records; the release has ", sizes.size()));
  }
  for (size_t k = 0; k < counts.size(); ++k) {
    if (counts[k].dim() != 1 || counts[k].size(0) != sizes[k] ||
        !counts[k].isfinite().all().item<bool>()) {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram ", k, " must hold ", sizes[k], " finite counts"));
    }
    counts[k] = counts[k].to(torch::kDouble);
  }
  if (consistency_rounds > 0 && variances.size() == counts.size()) {
    counts = shape.ConsistentCounts(std::move(counts), variances, static_cast<double>(rows),
                                    consistency_rounds);
  }
  std::vector<torch::Tensor> probabilities;
  const double total = static_cast<double>(rows);
  for (const torch::Tensor& histogram : counts) {
    probabilities.push_back(ProjectToTotal(histogram, total) / total);
  }
  return shape.WithProbabilities(torch::cat(probabilities));
}

absl::StatusOr<MarginalTarget> MeasureCentrally(const torch::Tensor& joint_table,
                                                const MarginalTarget& shape,
                                                const v1::PrivacyPlan& plan, SecureRandom* noise) {
  ASSIGN_OR_RETURN(std::vector<torch::Tensor> counts,
                   MeasureCounts(joint_table, shape, plan, noise));
  return TargetFromCounts(shape, counts, joint_table.size(0));
}

absl::StatusOr<std::vector<torch::Tensor>> MeasureCounts(const torch::Tensor& joint_table,
                                                         const MarginalTarget& shape,
                                                         const v1::PrivacyPlan& plan,
                                                         SecureRandom* noise) {
  const std::vector<int64_t> sizes = shape.HistogramSizes();
  if (static_cast<int>(sizes.size()) != plan.measurements_size()) {
    return absl::InvalidArgumentError("the release shape and the plan differ");
  }
  const int64_t rows = joint_table.size(0);
  const torch::Tensor all = shape.TableProbabilities(joint_table) * static_cast<double>(rows);
  std::vector<torch::Tensor> counts;
  int64_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    torch::Tensor histogram = all.narrow(0, at, sizes[k]).clone();
    at += sizes[k];
    if (noise != nullptr) {
      const v1::MeasuredHistogram& measured = plan.measurements(static_cast<int>(k));
      const double holders = measured.cross_party() ? 2.0 : 1.0;
      histogram += GaussianTensor(*noise, histogram.sizes(), measured.sigma() * std::sqrt(holders),
                                  torch::kDouble);
    }
    counts.push_back(histogram);
  }
  return counts;
}

}  // namespace vfsynth::marginals
