#ifndef VFSYNTH_COMMON_PRIVACY_CONVERSION_H_
#define VFSYNTH_COMMON_PRIVACY_CONVERSION_H_

// RDP curve -> (ε, δ)-DP.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth::privacy {

enum class Conversion {
  // Mironov 2017: ε = min_α RDP(α) + log(1/δ)/(α-1). What autodp, VFLGAN and
  // GS-WGAN report, and the old TF Privacy.
  kClassic,
  // Balle et al. 2020 (Thm 21), as in Opacus / TF Privacy / dp_accounting:
  // ε = min_α RDP(α) + log((α-1)/α) - (log δ + log α)/(α-1). Never larger.
  kImproved,
};

// "classic" | "improved".
absl::StatusOr<Conversion> ParseConversion(absl::string_view name);
std::string ConversionName(Conversion conversion);
// The conversion a settings enum names; an error for a number no name stands for.
absl::StatusOr<Conversion> ConversionOf(v1::ExperimentalPrivacyConfig::Conversion setting);

struct EpsilonAndOrder {
  double epsilon = 0.0;  // clamped at 0; +inf if every order is infinite
  double order = 0.0;    // the minimising order
  // The minimum sits on the first or last order: widen the order grid for a
  // tighter ε (Opacus warns in this case).
  bool order_at_boundary = false;
};

struct DeltaAndOrder {
  double delta = 1.0;
  double order = 0.0;
};

// `orders` and `rdp` are parallel; orders <= 1 and non-finite RDP values are
// skipped. δ must be in (0, 1).
absl::StatusOr<EpsilonAndOrder> EpsilonFromRdp(const std::vector<double>& orders,
                                               const std::vector<double>& rdp, double delta,
                                               Conversion conversion);

// The inverse: the smallest δ (capped at 1) for which the curve gives `epsilon`.
absl::StatusOr<DeltaAndOrder> DeltaFromRdp(const std::vector<double>& orders,
                                           const std::vector<double>& rdp, double epsilon,
                                           Conversion conversion);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_CONVERSION_H_
