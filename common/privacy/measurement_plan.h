#ifndef VFSYNTH_COMMON_PRIVACY_MEASUREMENT_PLAN_H_
#define VFSYNTH_COMMON_PRIVACY_MEASUREMENT_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vfsynth::privacy {

// One one-hot column of the joint encoding, as the plan sees it: public sizes only.
struct PlannedBlock {
  int party = 0;       // its holder, in party order
  int width = 0;       // categories (bins), missing slot included
  int refined = 0;     // its 1-way histogram's cells (bins refined by the position parts)
  bool label = false;  // training.label_column
  int pair_width = 0;  // its cells in 2-way tables (bins merged); 0: width
};

// One histogram the measured-marginals mode releases: a 1-way histogram of a block, or
// the 2-way table of two blocks, at one party (measured there) or across two (secure
// counts: each holder adds its own noise of `sigma`, so the released count carries
// both).
struct Measurement {
  std::vector<int> blocks;  // one or two indices into the plan's blocks, ascending
  int64_t cells = 0;
  bool cross_party = false;
  // Standard deviation of each holder's discrete Gaussian per count. Under replace-one a
  // record moves one count down and one up (L2 sensitivity √2), so this histogram costs
  // ρ = 1/σ² (zCDP) against anyone who knows the other holder's noise.
  double sigma = 0;
};

struct PlanOptions {
  double rho = 0;                 // the budget's zCDP ρ, spent entirely by the measurements
  int64_t max_pair_cells = 0;     // pairs above this are not measured (label pairs always are)
  double one_way_weight = 1;      // ρ shares, relative: a histogram's ρ is proportional to
  double pair_weight = 1;         // its weight
  double label_pair_weight = 1;
};

// Every 1-way histogram; every pair of blocks with at most max_pair_cells cells and every
// pair with the label. A rule in public sizes only: which pairs carry dependence is a
// property of the private data, and choosing by it would need its own release. The ρ
// shares follow the weights: σ_j = √(W / (w_j·ρ)) for the weights' sum W, so the
// measurements' ρ sum to options.rho.
absl::StatusOr<std::vector<Measurement>> PlanMeasurements(const std::vector<PlannedBlock>& blocks,
                                                          const PlanOptions& options);

// The zCDP ρ the measurements cost: Σ 1/σ_j².
double MeasurementsRho(const std::vector<Measurement>& measurements);

// "age", "age x workclass": for logs and reports.
std::string MeasurementName(const Measurement& measurement,
                            const std::vector<std::string>& block_names);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_MEASUREMENT_PLAN_H_
