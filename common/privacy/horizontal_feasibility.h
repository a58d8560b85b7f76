#ifndef VFSYNTH_COMMON_PRIVACY_HORIZONTAL_FEASIBILITY_H_
#define VFSYNTH_COMMON_PRIVACY_HORIZONTAL_FEASIBILITY_H_

// Before a horizontal run: can the model's label be expected to survive the privacy
// noise at this population? Estimated from public quantities alone (the users, ε, the
// settings and the model's size), against a threshold read off the population benchmark
// (docs/decisions/horizontal-population.md).

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// signds: the per-coordinate signal-to-noise bound a label needs at least. No measured
// signds run carried the label (the largest bound measured, 18.8, still lost it), so this
// is a lower bound: a run below it is expected to lose the label, one above it is only
// not ruled out.
// dpfedavg: the averaged update's noise-to-signal a label tolerates at most: between the
// largest measured value that kept it (0.0402) and the smallest that lost it (0.0515).
// Both from the population benchmark (docs/decisions/horizontal-population.md).
inline constexpr double kSignDsSignalToNoiseNeeded = 20;
inline constexpr double kDpFedAvgNoiseToSignalTolerated = 0.045;

// The population search of dpfedavg stops here.
inline constexpr int64_t kMaxFeasibilityUsers = 1'000'000'000;

struct HorizontalFeasibility {
  std::string statistic;  // what `value` measures, in words
  double value = 0;
  double threshold = 0;
  bool survives = false;
  int64_t users = 0;
  // The smallest population at which the label survives, everything else fixed; nullopt
  // if none does (below kMaxFeasibilityUsers, or at all where training.rounds fixes the
  // signds reports). At or below `users` when it survives.
  std::optional<int64_t> users_needed;
  std::string line;  // the verdict in one line of plain words
};

// The estimate for a run of `parties` parties holding `users` users, with the model's
// `parameters` d, from resolved privacy, horizontal and training settings (the plan
// ResolveHorizontalPlan makes of them):
//   signds: S = sqrt(R·p/(2k)), R = rounds·users_per_round reports, k = SignDsTopK(d, α),
//     p = SignDsTopProbability(d, k, ε / participation_cap); survives iff S >= the threshold.
//   dpfedavg: NSR = sqrt(d)·z·2·sqrt(K)/n, the norm of the average's noise over the largest
//     norm C of an average of clipped updates (C cancels), z the plan's noise multiplier;
//     survives iff NSR <= the threshold.
// The plan's errors (users_per_round above the users, for one) pass through.
absl::StatusOr<HorizontalFeasibility> EstimateHorizontalFeasibility(
    const v1::PrivacyConfig& privacy, const v1::HorizontalConfig& horizontal,
    const v1::TrainingConfig& training, int parties, int64_t users, int64_t parameters);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PRIVACY_HORIZONTAL_FEASIBILITY_H_
