#ifndef VFSYNTH_COMMON_DP_PATE_VOTE_H_
#define VFSYNTH_COMMON_DP_PATE_VOTE_H_

// Teacher voting of the `pate` mode (docs/ensemble-modes.md): every shard
// critic votes per synthetic row, the party aggregates the votes with Gaussian noise.
// The noise is the only thing that makes a vote private: it comes from a cryptographic
// stream and is drawn and added in double precision.

#include <torch/torch.h>

#include "common/random/secure_random.h"

namespace vfsynth {

// VDGAN-PATE (DataLens) votes. grads [E, n, d] -> votes [E, n, d] in {-1, 0, 1}: per
// (critic, row), the min(k, d) coordinates of largest |g| are clipped to [-c, c],
// divided by the largest clipped magnitude (so in [-1, 1]) and turned into +1 with
// probability (1 + v)/2, else -1; all other coordinates are 0. One critic's vote
// vector therefore has exactly min(k, d) entries of ±1.
torch::Tensor TopKStochasticSignVotes(const torch::Tensor& grads, int top_k, double clip,
                                      SecureRandom& rng);

// Sum over critics plus N(0, sigma²) per entry, then +1 where the noisy sum is
// >= threshold, -1 where <= -threshold, 0 otherwise. votes [E, n, d] -> [n, d].
torch::Tensor NoisyThresholdVote(const torch::Tensor& votes, double threshold, double sigma,
                                 SecureRandom& noise);

// G-PATE discretisation: projected [E, n, p] values clipped to [-c, c] and binned into
// `bins` equal bins; returns the per-(row, coordinate) histogram of critics' bins,
// [n, p, bins] (each histogram sums to E).
torch::Tensor BinVoteHistogram(const torch::Tensor& projected, double clip, int bins);

// Confident-GNMax (Papernot et al. 2018) on each histogram counts[..., B]: if the max
// count plus N(0, sigma_threshold²) reaches `threshold`, the argmax of counts plus
// N(0, sigma_argmax²) per bin; otherwise -1 (no answer). Returns [...] (kLong).
torch::Tensor ConfidentGnmax(const torch::Tensor& counts, double threshold, double sigma_threshold,
                             double sigma_argmax, SecureRandom& noise);

// Midpoint of each winning bin of [-c, c] split into `bins`; 0 where winners is -1.
torch::Tensor BinMidpoints(const torch::Tensor& winners, double clip, int bins);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_DP_PATE_VOTE_H_
