#include "common/marginals/party_measurement.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/gan/marginal_target.h"
#include "common/secure/discrete_gaussian.h"

namespace vfsynth::marginals {
namespace {

// Bins of a block with a position (a numeric column's grid); 0 for a categorical block.
int Bins(const OutputBlock& block) { return block.position_offset >= 0 ? block.position_slots : 0; }

int Position(const std::vector<int>& sorted, int value) {
  return static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), value) - sorted.begin());
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> OwnCounts(const torch::Tensor& table,
                                               const MeasuredLayout& own, int first_column,
                                               const v1::PrivacyPlan& plan,
                                               const std::vector<int>& histograms,
                                               SecureRandom* noise) {
  const int columns = static_cast<int>(own.blocks.size());
  std::vector<std::pair<int, int>> pairs;
  std::vector<size_t> place;  // per requested histogram, its index in the shape's sizes
  for (const int h : histograms) {
    if (h < 0 || h >= plan.measurements_size()) {
      return absl::InvalidArgumentError(absl::StrCat("histogram ", h, " is not in the plan"));
    }
    const v1::MeasuredHistogram& m = plan.measurements(h);
    std::vector<int> local;
    for (const int c : m.columns()) {
      if (c < first_column || c >= first_column + columns) {
        return absl::InvalidArgumentError(absl::StrCat("histogram ", h, " counts column ", c,
                                                       ", which this party does not hold"));
      }
      local.push_back(c - first_column);
    }
    if (local.size() == 1) {
      place.push_back(static_cast<size_t>(local[0]));
    } else {
      place.push_back(static_cast<size_t>(columns) + pairs.size());
      pairs.emplace_back(local[0], local[1]);
    }
  }
  const v1::MeasurementConfig& settings = plan.privacy().measurement();
  std::vector<int> groups;
  for (const OutputBlock& block : own.blocks) {
    groups.push_back(Bins(block) > 0 ? settings.pair_bins() : 0);
  }
  ASSIGN_OR_RETURN(
      const MarginalTarget shape,
      MarginalTarget::OfHistograms(own.blocks, pairs, settings.position_bins(), groups));
  const std::vector<int64_t> sizes = shape.HistogramSizes();
  const torch::Tensor all = (shape.TableProbabilities(table) * static_cast<double>(table.size(0)))
                                .round()
                                .to(torch::kLong);
  std::vector<int64_t> starts(sizes.size(), 0);
  for (size_t k = 1; k < sizes.size(); ++k) starts[k] = starts[k - 1] + sizes[k - 1];
  const int64_t* values = all.data_ptr<int64_t>();
  std::vector<int64_t> counts;
  for (size_t i = 0; i < histograms.size(); ++i) {
    const double sigma = plan.measurements(histograms[i]).sigma();
    for (int64_t cell = 0; cell < sizes[place[i]]; ++cell) {
      int64_t count = values[starts[place[i]] + cell];
      if (noise != nullptr) {
        ASSIGN_OR_RETURN(const int64_t drawn, secure::SampleDiscreteGaussian(sigma, *noise));
        count += drawn;
      }
      counts.push_back(count);
    }
  }
  return counts;
}

std::vector<int32_t> PairCells(const torch::Tensor& table, const OutputBlock& block,
                               const v1::MeasurementConfig& settings) {
  const torch::Tensor index =
      table.narrow(1, block.offset, block.width).argmax(1).to(torch::kInt).contiguous();
  std::vector<int32_t> cells(index.data_ptr<int32_t>(), index.data_ptr<int32_t>() + index.numel());
  const int bins = Bins(block);
  // The merge LayoutOf and ReleaseShape apply (MarginalTarget::OfHistograms' pair maps).
  if (bins > 0 && settings.pair_bins() > 0 && bins > settings.pair_bins()) {
    const std::vector<int> merged = PairGroups(block.width, bins, settings.pair_bins());
    for (int32_t& cell : cells) cell = merged[cell];
  }
  return cells;
}

std::vector<CrossPair> CrossPairsOf(const v1::PrivacyPlan& plan) {
  std::map<std::pair<int, int>, CrossPair> pairs;
  for (int h = 0; h < plan.measurements_size(); ++h) {
    const v1::MeasuredHistogram& m = plan.measurements(h);
    if (!m.cross_party() || m.columns_size() != 2) continue;
    const int a = m.columns(0), b = m.columns(1);
    const int low = plan.columns(a).party(), high = plan.columns(b).party();
    CrossPair& pair = pairs[{low, high}];
    pair.low = low;
    pair.high = high;
    pair.low_columns.push_back(a);
    pair.high_columns.push_back(b);
    pair.histograms.push_back(h);
  }
  std::vector<CrossPair> out;
  for (auto& [key, pair] : pairs) {
    for (std::vector<int>* columns : {&pair.low_columns, &pair.high_columns}) {
      std::sort(columns->begin(), columns->end());
      columns->erase(std::unique(columns->begin(), columns->end()), columns->end());
    }
    out.push_back(std::move(pair));
  }
  return out;
}

absl::StatusOr<secure::SlotLayout> LowLayout(const v1::PrivacyPlan& plan, const CrossPair& pair,
                                             int modulus_bits) {
  std::vector<int> categories;
  for (const int c : pair.low_columns) categories.push_back(plan.columns(c).pair_width());
  return secure::SlotLayout::Create(std::move(categories), modulus_bits);
}

std::vector<double> SlotSigmas(const v1::PrivacyPlan& plan, const CrossPair& pair,
                               const secure::SlotLayout& layout, int high_column, bool noiseless) {
  std::vector<double> sigmas(layout.num_slots(), secure::kMaskedSlot);
  for (const int h : pair.histograms) {
    const v1::MeasuredHistogram& m = plan.measurements(h);
    if (m.columns(1) != high_column) continue;
    const int column = Position(pair.low_columns, m.columns(0));
    for (int v = 0; v < layout.categories(column); ++v) {
      sigmas[layout.offset(column) + v] = noiseless ? 0.0 : m.sigma();
    }
  }
  return sigmas;
}

absl::StatusOr<std::vector<int64_t>> CrossHistogramCounts(
    const v1::PrivacyPlan& plan, const CrossPair& pair, const secure::SlotLayout& layout,
    const std::vector<secure::CrossCounts>& by_high_column) {
  if (by_high_column.size() != pair.high_columns.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(by_high_column.size(), " sums for ", pair.high_columns.size(), " columns"));
  }
  std::vector<int64_t> counts;
  for (const int h : pair.histograms) {
    const v1::MeasuredHistogram& m = plan.measurements(h);
    const int column = Position(pair.low_columns, m.columns(0));
    const secure::CrossCounts& sums = by_high_column[Position(pair.high_columns, m.columns(1))];
    const int width_a = plan.columns(m.columns(0)).pair_width();
    const int width_b = plan.columns(m.columns(1)).pair_width();
    if (sums.b_categories != width_b) {
      return absl::InvalidArgumentError(
          absl::StrCat("sums over ", sums.b_categories, " values for a column of ", width_b));
    }
    for (int a = 0; a < width_a; ++a) {
      for (int b = 0; b < width_b; ++b) counts.push_back(sums.at(b, layout.offset(column) + a));
    }
  }
  return counts;
}

}  // namespace vfsynth::marginals
