#ifndef VFSYNTH_COMMON_PRIVACY_SIGN_DS_H_
#define VFSYNTH_COMMON_PRIVACY_SIGN_DS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/random/secure_random.h"

namespace vfsynth {

// SignDS (sign-based dimension selection, Jiang et al., PoPETs 2022): a user's whole local
// update Δ ∈ R^d leaves as one coordinate index j and one sign s, and the pair is ε-LDP
// for any two updates, so neither clipping nor noise is needed in local training.
// s is a fair coin independent of the data; the top-k set holds the k largest signed
// values of Δ for s = +1 and the k smallest for s = −1; j is uniform in the top-k set with
// probability p = e^ε·k / (d − k + e^ε·k), else uniform outside it. Every output then has
// probability p/k or (1 − p)/(d − k), whose ratio is at most e^ε.
struct SignDsReport {
  int64_t index = 0;
  bool positive = true;  // s = +1
};

// The top-k size for ratio `alpha` = k/d: round(alpha·d), at least 1 and at most d − 1.
int64_t SignDsTopK(int64_t d, double alpha);

// p, the probability that j comes from the top-k set: 1 / (1 + ((d − k)/k)·e^{−ε}).
double SignDsTopProbability(int64_t d, int64_t k, double epsilon);

// The top-k set for sign `positive`, in ascending index order; equal values are ranked by
// lower index first, so the set is a function of Δ alone.
std::vector<int64_t> SignDsTopSet(absl::Span<const float> update, int64_t k, bool positive);

// One report of `update` at ε with top-k size k, every coin from `random`. An update with
// a non-finite value reports a uniform index (and the fair sign), never an error: the
// error would leave the party outside the LDP. INVALID_ARGUMENT unless d >= 2, 1 <= k < d
// and ε > 0 is finite.
absl::StatusOr<SignDsReport> SignDs(absl::Span<const float> update, int64_t k, double epsilon,
                                    SecureRandom& random);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_PRIVACY_SIGN_DS_H_
