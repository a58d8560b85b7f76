#ifndef VFSYNTH_COMMON_GAN_CROSS_PARTY_INDEPENDENCE_H_
#define VFSYNTH_COMMON_GAN_CROSS_PARTY_INDEPENDENCE_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "common/data/encoder.h"

namespace vfsynth {

// A prior of independence between parties' columns for G's objective: the sum over
// every pair of one-hot blocks held by two different parties of the mutual information
// of G's batch (the batch mean of the relaxed rows' outer product against the product of
// the batch marginals). G's shared trunk otherwise couples the parties' columns at will
// where the critics cannot tell it apart from the data: at ε = 1 the parties' marginal
// releases (with their within-party pairs) shape each party's columns, the noised
// critics say nothing about the dependence across parties, and G's tables show a
// cross-party dependence worse than independence (docs/decisions/defaults.md). It is
// computed by the curator from G's output alone, so it costs no privacy.
class CrossPartyIndependence {
 public:
  // `encoders` in party order, as concatenated in G's output. The block of categorical
  // column `excluded_column` (if any party has it) takes no part: label pairs
  // (label_pairs.h) give G that column's dependence instead; the prior would undo it.
  explicit CrossPartyIndependence(const std::vector<const TableEncoder*>& encoders,
                                  const std::string& excluded_column = "");

  // Σ over cross-party block pairs of I(a; b) under the batch's empirical joint (nats);
  // 0 for a batch whose joint is the product of its marginals.
  torch::Tensor Loss(const torch::Tensor& fake) const;

  int pairs() const { return pairs_; }

 private:
  // Per party, G's output columns of its one-hot blocks. Every cross-party block pair's
  // joint is a sub-block of one party pair's joint over these columns, and its product
  // of marginals the matching sub-block of the outer product of the column means: one
  // product per party pair covers them all.
  std::vector<torch::Tensor> columns_;
  int pairs_ = 0;
};

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_CROSS_PARTY_INDEPENDENCE_H_
