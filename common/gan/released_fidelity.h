#ifndef VFSYNTH_COMMON_GAN_RELEASED_FIDELITY_H_
#define VFSYNTH_COMMON_GAN_RELEASED_FIDELITY_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/gan/marginal_target.h"
#include "vfsynth/v1/released_fidelity.pb.h"

namespace vfsynth {

// A published table scored against the histograms a run released under DP (a party's
// marginal release, the label-pair tables): nobody holds the joint real table, but these
// releases are public to whoever holds them, so the score costs no further privacy.
// Each distance comes with the distance the true table itself would have from the
// release, estimated from the release's known noise.

// One set of released histograms and what is known of their noise. A histogram "ends"
// at its block (one-way) or its pair's second block; per-block fields describe the
// histograms that end there.
struct ReleasedHistograms {
  MarginalTarget target;                   // the released probabilities
  std::vector<std::string> block_names;    // per target block
  std::vector<std::string> block_parties;  // per target block: who released what ends there
  std::vector<double> block_noise;         // per target block: each count's Gaussian std
  // Label pairs: every pair's first block is a label released by k-ary randomized response
  // that keeps it with this probability, and the tables were debiased (LabelPairTarget).
  bool label_pairs = false;
  double label_keep = 1;
};

// The published table's exact histograms for each release, added up a chunk of rows at a
// time, so that a large table is never encoded whole.
class PublishedHistograms {
 public:
  explicit PublishedHistograms(const std::vector<ReleasedHistograms>& releases);
  // chunk[i]: rows of the published table in releases[i]'s encoding (checked against it).
  absl::Status Add(const std::vector<torch::Tensor>& chunk);
  int64_t rows() const { return rows_; }
  // releases[i]'s histograms of the rows added so far, normalised.
  torch::Tensor Probabilities(size_t i) const;

 private:
  const std::vector<ReleasedHistograms>& releases_;
  std::vector<torch::Tensor> counts_;
  int64_t rows_ = 0;
};

// Scores the published table against releases[i], for `records` released records. `draws`
// bootstrap draws per histogram estimate each release's noise distance (seeded: the report
// is reproducible). `published` was built over the same `releases`.
absl::StatusOr<v1::ReleasedFidelity> ScoreAgainstReleases(
    const std::vector<ReleasedHistograms>& releases, const PublishedHistograms& published,
    int64_t records, int draws = 20, uint64_t seed = 1);
// The same for a published table given whole: published[i] in releases[i]'s encoding.
absl::StatusOr<v1::ReleasedFidelity> ScoreAgainstReleases(
    const std::vector<ReleasedHistograms>& releases, const std::vector<torch::Tensor>& published,
    int64_t records, int draws = 20, uint64_t seed = 1);

// Total variation distance between two probability vectors (float64).
double TotalVariation(const torch::Tensor& p, const torch::Tensor& q);

// A k x w joint distribution's distance from the product of its margins (TVD).
double DependenceOf(const torch::Tensor& joint);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_RELEASED_FIDELITY_H_
