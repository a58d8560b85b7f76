#include "common/privacy/conversion.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vfsynth::privacy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

absl::Status CheckCurve(const std::vector<double>& orders, const std::vector<double>& rdp) {
  if (orders.size() != rdp.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RDP curve has ", orders.size(), " orders but ", rdp.size(), " values"));
  }
  if (orders.empty()) return absl::InvalidArgumentError("RDP curve has no orders");
  for (double r : rdp) {
    if (std::isnan(r) || r < 0.0) {
      return absl::InvalidArgumentError(absl::StrCat("RDP values must be >= 0, got ", r));
    }
  }
  return absl::OkStatus();
}

bool Usable(double order, double rdp) { return order > 1.0 && std::isfinite(rdp); }

}  // namespace

absl::StatusOr<Conversion> ParseConversion(absl::string_view name) {
  if (name == "classic") return Conversion::kClassic;
  if (name == "improved") return Conversion::kImproved;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown conversion '", name, "' (expected classic or improved)"));
}

absl::StatusOr<Conversion> ConversionOf(v1::ExperimentalPrivacyConfig::Conversion setting) {
  switch (setting) {
    case v1::ExperimentalPrivacyConfig::classic:
      return Conversion::kClassic;
    case v1::ExperimentalPrivacyConfig::improved:
      return Conversion::kImproved;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown conversion ", static_cast<int>(setting), " (expected classic or improved)"));
  }
}

std::string ConversionName(Conversion conversion) {
  return conversion == Conversion::kClassic ? "classic" : "improved";
}

absl::StatusOr<EpsilonAndOrder> EpsilonFromRdp(const std::vector<double>& orders,
                                               const std::vector<double>& rdp, double delta,
                                               Conversion conversion) {
  if (absl::Status s = CheckCurve(orders, rdp); !s.ok()) return s;
  if (!(delta > 0.0 && delta < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("delta must be in (0, 1), got ", delta));
  }
  EpsilonAndOrder best{kInf, orders.front(), false};
  size_t best_index = 0;
  const double log_delta = std::log(delta);
  for (size_t i = 0; i < orders.size(); ++i) {
    const double a = orders[i];
    if (!Usable(a, rdp[i])) continue;
    // Bretagnolle-Huber: TV <= sqrt(1 - e^{-KL}) and KL <= RDP, so a curve this
    // small is (0, δ)-DP outright (dp_accounting applies the same rule).
    const bool within_delta = -std::expm1(-rdp[i]) <= delta * delta;
    const double eps = within_delta ? 0.0
                       : conversion == Conversion::kClassic
                           ? rdp[i] - log_delta / (a - 1.0)
                           : rdp[i] + std::log1p(-1.0 / a) - (log_delta + std::log(a)) / (a - 1.0);
    if (eps < best.epsilon) {
      best.epsilon = eps;
      best.order = a;
      best_index = i;
    }
  }
  if (std::isfinite(best.epsilon)) {
    best.order_at_boundary = best_index == 0 || best_index + 1 == orders.size();
  }
  best.epsilon = std::max(0.0, best.epsilon);  // (ε<0, δ)-DP implies (0, δ)-DP
  return best;
}

absl::StatusOr<DeltaAndOrder> DeltaFromRdp(const std::vector<double>& orders,
                                           const std::vector<double>& rdp, double epsilon,
                                           Conversion conversion) {
  if (absl::Status s = CheckCurve(orders, rdp); !s.ok()) return s;
  if (!(epsilon >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat("epsilon must be >= 0, got ", epsilon));
  }
  DeltaAndOrder best{1.0, orders.front()};
  double best_log_delta = 0.0;
  for (size_t i = 0; i < orders.size(); ++i) {
    const double a = orders[i];
    if (!Usable(a, rdp[i])) continue;
    // Each conversion solved for log δ at this order.
    const double log_delta =
        conversion == Conversion::kClassic
            ? (a - 1.0) * (rdp[i] - epsilon)
            : (a - 1.0) * (rdp[i] - epsilon + std::log1p(-1.0 / a)) - std::log(a);
    if (log_delta < best_log_delta) {
      best_log_delta = log_delta;
      best.order = a;
    }
  }
  best.delta = std::exp(best_log_delta);
  return best;
}

}  // namespace vfsynth::privacy
