#include "common/privacy/noise_figure.h"

#include <spdlog/spdlog.h>

namespace vfsynth {

void LogPlannedCriticNoise(std::string_view mode, std::string_view critic, double figure,
                           int64_t parameters, int64_t batch_size, double warn_above) {
  if (figure > warn_above) {
    spdlog::warn(
        "privacy {}: the noise on each step's mean {} gradient is {:.1f}x the clip bound "
        "({} parameters, batch {}): it outweighs what a batch can contribute, and at this level "
        "measured tables lost much of their structure. More records, "
        "fewer rounds, a smaller critic or a larger epsilon lower it",
        mode, critic, figure, parameters, batch_size);
  } else {
    spdlog::info(
        "privacy {}: noise on each step's mean {} gradient {:.2f}x the clip bound ({} parameters)",
        mode, critic, figure, parameters);
  }
}

}  // namespace vfsynth
