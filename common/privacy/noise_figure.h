#ifndef VFSYNTH_COMMON_PRIVACY_NOISE_FIGURE_H_
#define VFSYNTH_COMMON_PRIVACY_NOISE_FIGURE_H_

#include <cstdint>
#include <string_view>

namespace vfsynth {

// MeanGradientNoiseToClip (dp_sgd.h) above which a critic's owner warns. In
// docs/evaluation.md's matrix, Adult's strict rows at ε = 1 and 3 (about 16 and 5 for
// its widest party) and both wine tables under DP (6-17) lost much of the table's
// structure; Adult's party critics at ε = 10 sit at 0.7-2.5.
inline constexpr double kNoisyCriticWarning = 4.0;

// Logs the planned noise on one DP-SGD step's mean gradient relative to the clip bound
// (`figure`, from public settings only) for `critic` ("critic", "shared critic D_s"):
// an info line, or a warning with what lowers it when it exceeds `warn_above`.
void LogPlannedCriticNoise(std::string_view mode, std::string_view critic, double figure,
                           int64_t parameters, int64_t batch_size, double warn_above);

// Logs one DP-SGD step's clipping diagnostics (ClipDiagnostics, dp_sgd.h): functions of
// private data, for the owner's own log only. With few examples clipped a lower C would
// cut the noise; with all clipped, C only scales the step. `critic` names the critic
// when the process trains more than one kind ("" for a party's own).
void LogDpStepDiagnostics(std::string_view critic, int64_t step, double mean_norm, double max_norm,
                          double fraction_clipped, double noise_std);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PRIVACY_NOISE_FIGURE_H_
