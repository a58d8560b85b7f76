#include "common/privacy/horizontal_feasibility.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/status_macros.h"
#include "common/privacy/privacy_plan.h"
#include "common/privacy/sign_ds.h"

namespace vfsynth {
namespace {

// "26,049": populations read at a glance.
std::string GroupedDigits(int64_t value) {
  std::string digits = absl::StrCat(value < 0 ? -value : value);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return value < 0 ? absl::StrCat("-", digits) : digits;
}

using Survives = std::function<absl::StatusOr<bool>(int64_t users)>;

// The smallest population above `failing` (one known to lose the label, or below every
// run) at which `survives` holds, for a verdict monotone in the population: doubling
// from `guess` until it holds, then bisection; nullopt if none up to kMaxFeasibilityUsers.
absl::StatusOr<std::optional<int64_t>> SmallestSurvivingPopulation(const Survives& survives,
                                                                   int64_t failing,
                                                                   int64_t guess) {
  int64_t passing = std::min(kMaxFeasibilityUsers, std::max(failing + 1, guess));
  while (true) {
    ASSIGN_OR_RETURN(const bool ok, survives(passing));
    if (ok) break;
    if (passing >= kMaxFeasibilityUsers) return std::nullopt;
    failing = passing;
    passing = std::min(kMaxFeasibilityUsers, passing * 2);
  }
  while (passing - failing > 1) {
    const int64_t middle = failing + (passing - failing) / 2;
    ASSIGN_OR_RETURN(const bool ok, survives(middle));
    (ok ? passing : failing) = middle;
  }
  return passing;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// signds: without training.rounds the reports grow with the population (rounds =
// users·cap / n, floored), so the reports the threshold needs, R* = S*²·2k/p, give the
// population in closed form; the plan's own rounding then settles the last user.
absl::StatusOr<std::optional<int64_t>> SignDsPopulationNeeded(
    const v1::HorizontalConfig& horizontal, const v1::TrainingConfig& training,
    double top_probability, int64_t top_k, const Survives& survives) {
  const int64_t n = horizontal.users_per_round();
  const int64_t cap = horizontal.participation_cap();
  if (training.rounds() > 0) {
    // rounds·n reports whatever the population: the smallest one that can answer them.
    const int64_t smallest_run = CeilDiv(training.rounds() * n, cap);
    ASSIGN_OR_RETURN(const bool ok, survives(smallest_run));
    if (!ok) return std::nullopt;
    return smallest_run;
  }
  const int64_t smallest_run = CeilDiv(n, cap);  // one round's answers
  const double reports_needed = kSignDsSignalToNoiseNeeded * kSignDsSignalToNoiseNeeded * 2.0 *
                                static_cast<double>(top_k) / top_probability;
  const double rounds_needed = std::ceil(reports_needed / static_cast<double>(n));
  const double users =
      std::ceil(rounds_needed * static_cast<double>(n) / static_cast<double>(cap));
  if (users > static_cast<double>(kMaxFeasibilityUsers)) return std::nullopt;
  int64_t needed = std::max(smallest_run, static_cast<int64_t>(users));
  while (needed > smallest_run) {
    ASSIGN_OR_RETURN(const bool ok, survives(needed - 1));
    if (!ok) break;
    --needed;
  }
  return SmallestSurvivingPopulation(survives, needed - 1, needed);
}

// `value` in three significant digits, or as many more as keep it on its side of the
// threshold (9.9992 must not read as the 10 it falls short of).
std::string ValueText(double value, double threshold, bool higher_survives) {
  const auto passes = [&](double v) { return higher_survives ? v >= threshold : v <= threshold; };
  for (int digits = 3; digits < 17; ++digits) {
    const std::string text = absl::StrFormat("%.*g", digits, value);
    double shown = 0;
    if (absl::SimpleAtod(text, &shown) && passes(shown) == passes(value)) return text;
  }
  return absl::StrFormat("%.17g", value);
}

std::string FeasibilityLine(const HorizontalFeasibility& f, const std::string& mode,
                            bool reports_fixed) {
  const bool signal_to_noise = mode == "signds";
  std::string line = absl::StrFormat(
      "feasibility (%s): %s %s at %s users, %s the %.3g the label %s: ", mode, f.statistic,
      ValueText(f.value, f.threshold, signal_to_noise), GroupedDigits(f.users),
      f.survives ? (signal_to_noise ? "at or above" : "at or below")
                 : (signal_to_noise ? "below" : "above"),
      f.threshold, signal_to_noise ? "needs" : "tolerates");
  if (f.survives) {
    // signds's threshold is a lower bound (no measured run carried the label).
    absl::StrAppend(&line, signal_to_noise ? "the label is not ruled out"
                                           : "expect the label to survive");
    if (f.users_needed.has_value() && *f.users_needed < f.users) {
      absl::StrAppend(&line, " (down to ", GroupedDigits(*f.users_needed), " users)");
    }
    return line;
  }
  absl::StrAppend(&line, "expect the label lost; ");
  if (f.users_needed.has_value()) {
    absl::StrAppend(&line,
                    signal_to_noise ? "it needs at least " : "it would survive from ",
                    GroupedDigits(*f.users_needed), " users");
  } else if (reports_fixed) {
    absl::StrAppend(&line, "no population would carry it while training.rounds fixes the reports");
  } else {
    absl::StrAppend(&line, "no population below ", GroupedDigits(kMaxFeasibilityUsers),
                    " would carry it",
                    signal_to_noise ? "" : " at these users a round (more lower the noise)");
  }
  return line;
}

}  // namespace

absl::StatusOr<HorizontalFeasibility> EstimateHorizontalFeasibility(
    const v1::PrivacyConfig& privacy, const v1::HorizontalConfig& horizontal,
    const v1::TrainingConfig& training, int parties, int64_t users, int64_t parameters) {
  if (parameters < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a feasibility estimate needs a model of at least 2 parameters, got ", parameters));
  }
  ASSIGN_OR_RETURN(const v1::PrivacyPlan plan,
                   ResolveHorizontalPlan(privacy, horizontal, training, parties, users));
  const bool sign_ds = privacy.mode() == v1::PrivacyConfig::signds;
  const int64_t top_k = SignDsTopK(parameters, horizontal.top_k_ratio());
  // ε_r, and so p, does not change with the population.
  const double top_probability = SignDsTopProbability(parameters, top_k, EpsilonPerAnswer(plan));
  const auto statistic = [&](const v1::PrivacyPlan& at) {
    if (sign_ds) {
      const double reports = static_cast<double>(at.rounds() * at.batch_size());
      return std::sqrt(reports * top_probability / (2.0 * static_cast<double>(top_k)));
    }
    return std::sqrt(static_cast<double>(parameters)) * at.noise_multiplier() * 2.0 *
           std::sqrt(static_cast<double>(parties)) / static_cast<double>(at.batch_size());
  };
  const double threshold = sign_ds ? kSignDsSignalToNoiseNeeded : kDpFedAvgNoiseToSignalTolerated;
  const auto passes = [&](double value) {
    return sign_ds ? value >= threshold : value <= threshold;
  };
  const Survives survives = [&](int64_t population) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(const v1::PrivacyPlan at,
                     ResolveHorizontalPlan(privacy, horizontal, training, parties, population));
    return passes(statistic(at));
  };

  HorizontalFeasibility f;
  f.statistic =
      sign_ds ? "per-coordinate signal-to-noise" : "noise-to-signal of the averaged update";
  f.threshold = threshold;
  f.users = users;
  f.value = statistic(plan);
  f.survives = passes(f.value);
  if (sign_ds) {
    ASSIGN_OR_RETURN(f.users_needed, SignDsPopulationNeeded(horizontal, training, top_probability,
                                                            top_k, survives));
  } else if (f.survives) {
    // Below users_per_round there is no run (its sampling rate would exceed 1).
    ASSIGN_OR_RETURN(f.users_needed, SmallestSurvivingPopulation(
                                         survives, horizontal.users_per_round() - 1, users));
  } else {
    ASSIGN_OR_RETURN(f.users_needed, SmallestSurvivingPopulation(survives, users, 2 * users));
  }
  f.line = FeasibilityLine(f, sign_ds ? "signds" : "dpfedavg", sign_ds && training.rounds() > 0);
  return f;
}

}  // namespace vfsynth
