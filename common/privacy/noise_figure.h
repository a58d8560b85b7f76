#ifndef VFSYNTH_COMMON_PRIVACY_NOISE_FIGURE_H_
#define VFSYNTH_COMMON_PRIVACY_NOISE_FIGURE_H_

#include <cstdint>
#include <string_view>

namespace vfsynth {

// MeanGradientNoiseToClip (dp_sgd.h) above which a critic's owner warns. In the
// measured runs, Adult's strict rows at ε = 1 and 3 (about 16 and 5 for
// its widest party) and both wine tables under DP (6-17) lost much of the table's
// structure; Adult's party critics at ε = 10 sit at 0.7-2.5.
inline constexpr double kNoisyCriticWarning = 4.0;

// Logs the planned noise on one DP-SGD step's mean gradient relative to the clip bound
// (`figure`, from public settings only) for `critic` ("critic", "shared critic D_s"):
// an info line, or a warning with what lowers it when it exceeds `warn_above`.
void LogPlannedCriticNoise(std::string_view mode, std::string_view critic, double figure,
                           int64_t parameters, int64_t batch_size, double warn_above);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PRIVACY_NOISE_FIGURE_H_
