#include "common/marginals/central_measurement.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/random/random_tensors.h"

namespace vfsynth::marginals {

absl::StatusOr<MarginalTarget> ReleaseShape(const std::vector<OutputBlock>& one_hot_blocks,
                                            const std::vector<Measurement>& measurements,
                                            int position_bins) {
  const int blocks = static_cast<int>(one_hot_blocks.size());
  std::vector<std::pair<int, int>> pairs;
  for (size_t k = 0; k < measurements.size(); ++k) {
    const std::vector<int>& b = measurements[k].blocks;
    const bool one_way = b.size() == 1;
    if (static_cast<int>(k) < blocks) {
      if (!one_way || b[0] != static_cast<int>(k)) {
        return absl::InvalidArgumentError(
            absl::StrCat("measurement ", k, " must be block ", k, "'s 1-way histogram"));
      }
      continue;
    }
    if (b.size() != 2 || b[0] >= b[1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("measurement ", k, " must be a pair of blocks in ascending order"));
    }
    pairs.emplace_back(b[0], b[1]);
  }
  if (static_cast<int>(measurements.size()) < blocks) {
    return absl::InvalidArgumentError(absl::StrCat("the plan measures ", measurements.size(),
                                                   " histograms, fewer than the ", blocks,
                                                   " blocks' 1-way ones"));
  }
  return MarginalTarget::OfHistograms(one_hot_blocks, std::move(pairs), position_bins);
}

absl::StatusOr<MarginalTarget> TargetFromCounts(const MarginalTarget& shape,
                                                const std::vector<torch::Tensor>& counts,
                                                int64_t rows) {
  const std::vector<int64_t> sizes = shape.HistogramSizes();
  if (counts.size() != sizes.size() || rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat("got ", counts.size(), " histograms of ", rows,
                                                   " records; the release has ", sizes.size()));
  }
  std::vector<torch::Tensor> probabilities;
  for (size_t k = 0; k < counts.size(); ++k) {
    if (counts[k].dim() != 1 || counts[k].size(0) != sizes[k] ||
        !counts[k].isfinite().all().item<bool>()) {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram ", k, " must hold ", sizes[k], " finite counts"));
    }
    const double total = static_cast<double>(rows);
    probabilities.push_back(ProjectToTotal(counts[k].to(torch::kDouble), total) / total);
  }
  return shape.WithProbabilities(torch::cat(probabilities));
}

absl::StatusOr<MarginalTarget> MeasureCentrally(const torch::Tensor& joint_table,
                                                const MarginalTarget& shape,
                                                const std::vector<Measurement>& measurements,
                                                SecureRandom* noise) {
  const std::vector<int64_t> sizes = shape.HistogramSizes();
  if (sizes.size() != measurements.size()) {
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
      const double holders = measurements[k].cross_party ? 2.0 : 1.0;
      histogram += GaussianTensor(*noise, histogram.sizes(),
                                  measurements[k].sigma * std::sqrt(holders), torch::kDouble);
    }
    counts.push_back(histogram);
  }
  return TargetFromCounts(shape, counts, rows);
}

}  // namespace vfsynth::marginals
