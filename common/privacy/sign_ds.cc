#include "common/privacy/sign_ds.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace vfsynth {

int64_t SignDsTopK(int64_t d, double alpha) {
  const int64_t k = static_cast<int64_t>(std::llround(alpha * static_cast<double>(d)));
  return std::clamp<int64_t>(k, 1, std::max<int64_t>(1, d - 1));
}

double SignDsTopProbability(int64_t d, int64_t k, double epsilon) {
  return 1.0 / (1.0 + (static_cast<double>(d - k) / static_cast<double>(k)) * std::exp(-epsilon));
}

std::vector<int64_t> SignDsTopSet(absl::Span<const float> update, int64_t k, bool positive) {
  std::vector<int64_t> order(update.size());
  std::iota(order.begin(), order.end(), 0);
  auto ranks_before = [&](int64_t a, int64_t b) {
    if (update[a] != update[b]) return positive ? update[a] > update[b] : update[a] < update[b];
    return a < b;
  };
  std::nth_element(order.begin(), order.begin() + k, order.end(), ranks_before);
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

absl::StatusOr<SignDsReport> SignDs(absl::Span<const float> update, int64_t k, double epsilon,
                                    SecureRandom& random) {
  const int64_t d = static_cast<int64_t>(update.size());
  if (d < 2 || k < 1 || k >= d) {
    return absl::InvalidArgumentError(
        absl::StrCat("SignDS needs 1 <= k < d with d >= 2 (got d ", d, ", k ", k, ")"));
  }
  if (!(epsilon > 0) || !std::isfinite(epsilon)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SignDS needs a finite epsilon > 0 (got ", epsilon, ")"));
  }
  SignDsReport report;
  report.positive = (random.NextUint64() & 1) == 1;
  // A non-finite update carries no usable direction. Refusing it would send the curator
  // a data-dependent bit outside the LDP; a uniform index, probability 1/d, lies between
  // p/k and (1 - p)/(d - k), so the report stays ε-LDP against every other update.
  if (!std::all_of(update.begin(), update.end(), [](float v) { return std::isfinite(v); })) {
    report.index = static_cast<int64_t>(random.UniformBelow(static_cast<uint64_t>(d)));
    return report;
  }
  const std::vector<int64_t> top = SignDsTopSet(update, k, report.positive);
  if (random.Uniform() < SignDsTopProbability(d, k, epsilon)) {
    report.index = top[random.UniformBelow(static_cast<uint64_t>(k))];
    return report;
  }
  // The r-th index outside the (sorted) top-k set: exact, without rejection.
  int64_t j = static_cast<int64_t>(random.UniformBelow(static_cast<uint64_t>(d - k)));
  for (int64_t t : top) {
    if (t > j) break;
    ++j;
  }
  report.index = j;
  return report;
}

}  // namespace vfsynth
