#ifndef VFSYNTH_COMMON_PRIVACY_ENSEMBLE_ACCOUNTING_H_
#define VFSYNTH_COMMON_PRIVACY_ENSEMBLE_ACCOUNTING_H_

// Accounting of the ensemble-critic modes (gswgan, pate; docs/ensemble-modes.md). A
// party splits its rows into E disjoint shards, one critic each; a record lives in
// exactly one shard, so under replace-one adjacency it moves exactly one shard critic.
// Each synthetic row's slice gradient is one release:
//   gswgan: the gradient of ONE shard critic, drawn uniformly and independently per
//           row from the party's secure generator, clipped to C, plus N(0, (z·2C)²):
//           a Gaussian with multiplier z subsampled without replacement at q = 1/E
//           (one of E elements, Wang-Balle-Kasiviswanathan Thm 9).
//   pate threshold: the sum of all E critics' {-1,0,1} top-k votes plus
//           N(0, (z·2√k)²): L2 sensitivity 2√k (one critic flips k signs), q = 1.
//   pate gnmax: p projected coordinates, each a Confident-GNMax query: the noisy max
//           count (sensitivity 1, std z) and the noisy histogram (L2 sensitivity √2,
//           std z·√2): 2p Gaussians of multiplier z, q = 1. Both are charged for every
//           query, answered or not (data-independent, an upper bound).

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/privacy/conversion.h"
#include "common/privacy/rdp.h"

namespace vfsynth::privacy {

// `steps` compositions of one step mechanism.
struct ChargedSteps {
  StepMechanism mechanism;
  int64_t steps = 0;
};

enum class RowAggregation { kGswgan, kPateThreshold, kPateGnmax };

struct EnsembleShape {
  RowAggregation aggregation = RowAggregation::kGswgan;
  int shards = 0;          // E >= 1
  int projection_dim = 0;  // p (kPateGnmax)
};

// One party's release of one synthetic row's slice gradient (see above).
StepMechanism RowRelease(double z, const EnsembleShape& shape);

// L2 sensitivity of a sum of top-k {-1,0,1} vote vectors when one voter changes.
double VoteSumSensitivity(int top_k);

// ε of all `releases` composed (RDP adds), under the without-replacement sampler.
absl::StatusOr<EpsilonAndOrder> ComposedEpsilon(const std::vector<ChargedSteps>& releases,
                                                double delta, Conversion conversion);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_ENSEMBLE_ACCOUNTING_H_
