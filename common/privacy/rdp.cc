#include "common/privacy/rdp.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/privacy/log_math.h"

namespace vfsynth::privacy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Orders above this are rejected for the without-replacement bound: its cost
// is quadratic in the order, and the optimum is far below for any sane (ε, δ).
constexpr double kMaxWorOrder = 4096;
// dp_accounting gives up on the fractional-order series after 1000 terms.
constexpr int kMaxSeriesTerms = 1000;

absl::Status CheckSampling(double q, double noise_multiplier, double order) {
  if (!(q >= 0.0 && q <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("sample rate must be in [0, 1], got ", q));
  }
  if (!(noise_multiplier >= 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("noise multiplier must be >= 0, got ", noise_multiplier));
  }
  if (!(order > 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("RDP order must be > 1, got ", order));
  }
  return absl::OkStatus();
}

// Cumulant (α-1)·RDP(α) of Thm 9 at an integer order >= 2 for the Gaussian:
// log(1 + q² C(α,2) min{4(e^{ε(2)}-1), 2e^{ε(2)}} + Σ_{j=3..α} 2 q^j C(α,j) e^{(j-1)ε(j)}),
// capped by the unsampled Gaussian's (α-1)ε(α).
double WorCumulantAtInteger(double q, double z, int alpha) {
  const double log_q = std::log(q);
  const double eps2 = GaussianRdp(z, 2.0);
  std::vector<double> terms;
  terms.reserve(alpha);
  terms.push_back(0.0);
  terms.push_back(2.0 * log_q + LogBinomial(alpha, 2) +
                  std::min(std::log(4.0) + LogExpm1(eps2), eps2 + std::log(2.0)));
  for (int j = 3; j <= alpha; ++j) {
    terms.push_back(std::log(2.0) + (j - 1) * GaussianRdp(z, j) + j * log_q +
                    LogBinomial(alpha, j));
  }
  return std::min((alpha - 1) * GaussianRdp(z, alpha), LogSumExp(terms));
}

// log A_α for integer α: the binomial expansion of E[(1 - q + q·e^{...})^α].
double PoissonLogAInteger(double q, double z, int alpha) {
  std::vector<double> terms;
  terms.reserve(alpha + 1);
  const double log_q = std::log(q);
  const double log_1mq = std::log1p(-q);
  for (int i = 0; i <= alpha; ++i) {
    terms.push_back(LogBinomial(alpha, i) + i * log_q + (alpha - i) * log_1mq +
                    (static_cast<double>(i) * i - i) / (2.0 * z * z));
  }
  return LogSumExp(terms);
}

// log A_α for fractional α (Mironov-Talwar-Zhang 2019 §3.3): two series split at
// z0, with generalised binomial coefficients whose sign alternates once i > α;
// negative coefficients are subtracted, as Opacus and TF Privacy do.
double PoissonLogAFractional(double q, double z, double alpha) {
  double log_a0 = -kInf;
  double log_a1 = -kInf;
  const double z0 = z * z * std::log(1.0 / q - 1.0) + 0.5;
  const double log_q = std::log(q);
  const double log_1mq = std::log1p(-q);
  double log_abs_coef = 0.0;  // log|C(α, 0)|
  bool positive = true;
  for (int i = 0;; ++i) {
    if (i > 0) {
      const double factor = (alpha - i + 1) / i;
      log_abs_coef += std::log(std::fabs(factor));
      if (factor < 0) positive = !positive;
    }
    const double j = alpha - i;
    const double log_t0 = log_abs_coef + i * log_q + j * log_1mq;
    const double log_t1 = log_abs_coef + j * log_q + i * log_1mq;
    const double log_e0 = std::log(0.5) + LogErfc((i - z0) / (std::sqrt(2.0) * z));
    const double log_e1 = std::log(0.5) + LogErfc((z0 - j) / (std::sqrt(2.0) * z));
    const double log_s0 = log_t0 + (static_cast<double>(i) * i - i) / (2.0 * z * z) + log_e0;
    const double log_s1 = log_t1 + (j * j - j) / (2.0 * z * z) + log_e1;
    if (positive) {
      log_a0 = LogAdd(log_a0, log_s0);
      log_a1 = LogAdd(log_a1, log_s1);
    } else {
      log_a0 = LogSub(log_a0, log_s0);
      log_a1 = LogSub(log_a1, log_s1);
    }
    if (std::max(log_s0, log_s1) < -30.0) break;
    // Not converging: +inf drops this order from the minimisation (safe).
    if (i >= kMaxSeriesTerms) return kInf;
  }
  return LogAdd(log_a0, log_a1);
}

}  // namespace

absl::StatusOr<Sampler> ParseSampler(absl::string_view name) {
  if (name == "wor") return Sampler::kWithoutReplacement;
  if (name == "poisson") return Sampler::kPoisson;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown sampler '", name, "' (expected wor or poisson)"));
}

std::string SamplerName(Sampler sampler) {
  return sampler == Sampler::kPoisson ? "poisson" : "wor";
}

absl::Status ValidateMechanism(const StepMechanism& mechanism) {
  return MechanismNoiseMultiplier(mechanism).status();
}

absl::StatusOr<double> MechanismNoiseMultiplier(const StepMechanism& mechanism) {
  if (!(mechanism.sample_rate >= 0.0 && mechanism.sample_rate <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample rate must be in [0, 1], got ", mechanism.sample_rate));
  }
  for (double epsilon : mechanism.randomized_responses) {
    if (!(epsilon > 0.0) || !std::isfinite(epsilon)) {
      return absl::InvalidArgumentError(
          absl::StrCat("randomized-response epsilon must be finite and > 0, got ", epsilon));
    }
  }
  if (!mechanism.randomized_responses.empty()) {
    if (mechanism.sample_rate != 1.0) {
      return absl::InvalidArgumentError(
          absl::StrCat("randomized response is accounted only unsampled (sample rate 1), got ",
                       mechanism.sample_rate));
    }
    if (mechanism.noise_multipliers.empty()) return 0.0;
  }
  return EffectiveNoiseMultiplier(mechanism.noise_multipliers);
}

absl::StatusOr<double> EffectiveNoiseMultiplier(const std::vector<double>& noise_multipliers) {
  if (noise_multipliers.empty()) {
    return absl::InvalidArgumentError("a step needs at least one release (noise multiplier)");
  }
  double inverse_square_sum = 0.0;
  for (double z : noise_multipliers) {
    if (!(z > 0.0) || !std::isfinite(z)) {
      return absl::InvalidArgumentError(
          absl::StrCat("noise multiplier must be finite and > 0, got ", z));
    }
    inverse_square_sum += 1.0 / (z * z);
  }
  return 1.0 / std::sqrt(inverse_square_sum);
}

std::vector<double> DefaultOrders(Sampler sampler) {
  std::vector<double> orders;
  if (sampler == Sampler::kWithoutReplacement) {
    for (int a = 2; a <= 256; ++a) orders.push_back(a);
  } else {
    for (int x = 1; x <= 99; ++x) orders.push_back(1.0 + x / 10.0);
    for (int a = 12; a <= 63; ++a) orders.push_back(a);
  }
  return orders;
}

double GaussianRdp(double noise_multiplier, double order) {
  return order / (2.0 * noise_multiplier * noise_multiplier);
}

absl::StatusOr<double> WorSubsampledGaussianRdp(double q, double noise_multiplier, double order) {
  RETURN_IF_ERROR(CheckSampling(q, noise_multiplier, order));
  if (q == 0.0) return 0.0;
  if (noise_multiplier == 0.0 || std::isinf(order)) return kInf;
  if (q == 1.0) return GaussianRdp(noise_multiplier, order);
  if (order > kMaxWorOrder) {
    return absl::InvalidArgumentError(
        absl::StrCat("order ", order, " exceeds the supported maximum ", kMaxWorOrder));
  }
  if (order <= 2.0) return WorCumulantAtInteger(q, noise_multiplier, 2);
  const double lo = std::floor(order);
  const double frac = order - lo;
  double cumulant = WorCumulantAtInteger(q, noise_multiplier, static_cast<int>(lo));
  if (frac > 0.0) {
    cumulant = (1.0 - frac) * cumulant +
               frac * WorCumulantAtInteger(q, noise_multiplier, static_cast<int>(lo) + 1);
  }
  return std::min(cumulant / (order - 1.0), GaussianRdp(noise_multiplier, order));
}

absl::StatusOr<double> PoissonSubsampledGaussianRdp(double q, double noise_multiplier,
                                                    double order) {
  RETURN_IF_ERROR(CheckSampling(q, noise_multiplier, order));
  if (q == 0.0) return 0.0;
  if (noise_multiplier == 0.0 || std::isinf(order)) return kInf;
  if (q == 1.0) return GaussianRdp(noise_multiplier, order);
  const bool integer = order == std::floor(order) && order < 1e6;
  const double log_a = integer ? PoissonLogAInteger(q, noise_multiplier, static_cast<int>(order))
                               : PoissonLogAFractional(q, noise_multiplier, order);
  return log_a / (order - 1.0);
}

double RandomizedResponseRdp(double epsilon, double order) {
  // log(e^{αε} + e^{(1−α)ε}) − log(e^ε + 1), each sum in log space: αε reaches
  // hundreds at the accountant's largest orders.
  const double log_numerator = LogAdd(order * epsilon, (1.0 - order) * epsilon);
  const double log_denominator = LogAdd(epsilon, 0.0);
  return (log_numerator - log_denominator) / (order - 1.0);
}

double RandomizedResponseEpsilonForRdp(double rdp, double order) {
  double low = 0.0, high = 1.0;
  while (RandomizedResponseRdp(high, order) < rdp && high < 1e6) high *= 2;
  for (int i = 0; i < 200 && high - low > 1e-15 * high; ++i) {
    const double middle = 0.5 * (low + high);
    (RandomizedResponseRdp(middle, order) < rdp ? low : high) = middle;
  }
  return high;  // the RDP at `order` is at least `rdp`, by at most the bracket's width
}

absl::StatusOr<std::vector<double>> ComposedRdp(const StepMechanism& mechanism, int64_t steps,
                                                const std::vector<double>& orders) {
  ASSIGN_OR_RETURN(const double z, MechanismNoiseMultiplier(mechanism));
  if (steps < 0) return absl::InvalidArgumentError(absl::StrCat("steps must be >= 0, got ", steps));
  const bool gaussian = z > 0.0;
  std::vector<double> rdp;
  rdp.reserve(orders.size());
  for (double order : orders) {
    if (!(order > 1.0))
      return absl::InvalidArgumentError(absl::StrCat("RDP order must be > 1, got ", order));
    double step = 0.0;
    if (gaussian) {
      ASSIGN_OR_RETURN(step, mechanism.sampler == Sampler::kPoisson
                                 ? PoissonSubsampledGaussianRdp(mechanism.sample_rate, z, order)
                                 : WorSubsampledGaussianRdp(mechanism.sample_rate, z, order));
    }
    for (double epsilon : mechanism.randomized_responses)
      step += RandomizedResponseRdp(epsilon, order);
    // 0 · ∞ must stay 0 (no steps, no loss).
    rdp.push_back(steps == 0 ? 0.0 : step * static_cast<double>(steps));
  }
  return rdp;
}

}  // namespace vfsynth::privacy
