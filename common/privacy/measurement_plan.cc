#include "common/privacy/measurement_plan.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vfsynth::privacy {

namespace {
int PairWidth(const PlannedBlock& block) {
  return block.pair_width > 0 ? block.pair_width : block.width;
}
}  // namespace

absl::StatusOr<std::vector<Measurement>> PlanMeasurements(const std::vector<PlannedBlock>& blocks,
                                                          const PlanOptions& options) {
  if (!(options.rho > 0) || !std::isfinite(options.rho)) {
    return absl::InvalidArgumentError(absl::StrCat("measurement budget ρ must be > 0, got ",
                                                   options.rho));
  }
  if (!(options.one_way_weight > 0 && options.pair_weight >= 0 &&
        options.label_pair_weight >= 0)) {
    return absl::InvalidArgumentError("measurement weights must be >= 0 (1-way: > 0)");
  }
  std::vector<Measurement> measurements;
  std::vector<double> weights;
  for (int i = 0; i < static_cast<int>(blocks.size()); ++i) {
    if (blocks[i].width < 1 || blocks[i].refined < blocks[i].width ||
        blocks[i].pair_width < 0 || blocks[i].pair_width > blocks[i].width) {
      return absl::InvalidArgumentError(absl::StrCat("block ", i, " has width ", blocks[i].width,
                                                     " and ", blocks[i].refined, " cells"));
    }
    measurements.push_back({{i}, blocks[i].refined, false, 0});
    weights.push_back(options.one_way_weight);
  }
  for (int i = 0; i < static_cast<int>(blocks.size()); ++i) {
    for (int j = i + 1; j < static_cast<int>(blocks.size()); ++j) {
      const int64_t cells = static_cast<int64_t>(PairWidth(blocks[i])) * PairWidth(blocks[j]);
      const bool label = blocks[i].label || blocks[j].label;
      const double weight = label ? options.label_pair_weight : options.pair_weight;
      if (weight <= 0 || (!label && cells > options.max_pair_cells)) continue;
      measurements.push_back({{i, j}, cells, blocks[i].party != blocks[j].party, 0});
      weights.push_back(weight);
    }
  }
  double total = 0;
  for (const double w : weights) total += w;
  for (size_t k = 0; k < measurements.size(); ++k) {
    measurements[k].sigma = std::sqrt(total / (weights[k] * options.rho));
  }
  return measurements;
}

double MeasurementsRho(const std::vector<Measurement>& measurements) {
  double rho = 0;
  for (const Measurement& m : measurements) rho += 1.0 / (m.sigma * m.sigma);
  return rho;
}

std::string MeasurementName(const Measurement& measurement,
                            const std::vector<std::string>& block_names) {
  std::vector<std::string> names;
  for (const int b : measurement.blocks) {
    names.push_back(b >= 0 && b < static_cast<int>(block_names.size()) ? block_names[b]
                                                                       : absl::StrCat("#", b));
  }
  return absl::StrJoin(names, " x ");
}

}  // namespace vfsynth::privacy
