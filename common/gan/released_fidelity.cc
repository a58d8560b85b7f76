#include "common/gan/released_fidelity.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/gan/label_pairs.h"

namespace vfsynth {
namespace {

torch::Tensor GaussianDraw(std::mt19937_64& rng, int64_t size, double std) {
  std::normal_distribution<double> normal(0.0, std);
  torch::Tensor draw = torch::empty({size}, torch::kDouble);
  double* values = draw.data_ptr<double>();
  for (int64_t i = 0; i < size; ++i) values[i] = normal(rng);
  return draw;
}

// What a marginal release of `truth` (probabilities) over `records` records could hold:
// Gaussian noise on the counts, then the projection onto `records` records.
torch::Tensor SimulatedRelease(const torch::Tensor& truth, double records, double noise,
                               std::mt19937_64& rng) {
  const torch::Tensor counts = truth * records + GaussianDraw(rng, truth.numel(), noise);
  return ProjectToTotal(counts, records) / records;
}

// The same for a label-pair table (k x w, row-major) whose label axis went through
// randomized response keeping a label with probability `keep`, debiased as the curator
// does (LabelPairTarget).
torch::Tensor SimulatedLabelRelease(const torch::Tensor& truth, int k, double keep,
                                    const torch::Tensor& unconfuse, double records, double noise,
                                    std::mt19937_64& rng) {
  const int64_t w = truth.numel() / k;
  const torch::Tensor counts = (truth * records).round().reshape({k, w}).contiguous();
  torch::Tensor observed = torch::zeros({k, w}, torch::kDouble);
  auto in = counts.accessor<double, 2>();
  auto out = observed.accessor<double, 2>();
  for (int l = 0; l < k; ++l) {
    for (int64_t j = 0; j < w; ++j) {
      int64_t left = static_cast<int64_t>(in[l][j]);
      const int64_t kept = std::binomial_distribution<int64_t>(left, keep)(rng);
      out[l][j] += kept;
      left -= kept;
      // The rest spread uniformly over the other k − 1 labels.
      int others = k - 1;
      for (int m = 0; m < k && left > 0; ++m) {
        if (m == l) continue;
        const int64_t moved =
            others == 1 ? left : std::binomial_distribution<int64_t>(left, 1.0 / others)(rng);
        out[m][j] += moved;
        left -= moved;
        --others;
      }
    }
  }
  const torch::Tensor noised = observed.reshape({-1}) + GaussianDraw(rng, k * w, noise);
  const torch::Tensor debiased = unconfuse.mm(noised.reshape({k, w})).reshape({-1});
  return ProjectToTotal(debiased, records) / records;
}

// The mean TVD from `released` of `draws` simulated releases of it: a label-pair table of
// `categories` labels (0: a marginal) under randomized response keeping `keep`, and each
// count's Gaussian of std `noise`. 0 for an exact marginal.
absl::StatusOr<double> NoiseDistance(const torch::Tensor& released, int categories, double keep,
                                     double noise, double records, int draws,
                                     std::mt19937_64& rng) {
  if (categories == 0 && noise == 0) return 0.0;
  torch::Tensor unconfuse;
  if (categories > 0) {
    ASSIGN_OR_RETURN(unconfuse, LabelUnconfusion(keep, categories));
  }
  double total = 0;
  for (int d = 0; d < draws; ++d) {
    const torch::Tensor draw =
        categories > 0
            ? SimulatedLabelRelease(released, categories, keep, unconfuse, records, noise, rng)
            : SimulatedRelease(released, records, noise, rng);
    total += TotalVariation(draw, released);
  }
  return total / draws;
}

absl::Status CheckRelease(const ReleasedHistograms& release, const torch::Tensor& published) {
  const size_t blocks = static_cast<size_t>(release.target.blocks());
  if (release.block_names.size() != blocks || release.block_parties.size() != blocks ||
      release.block_noise.size() != blocks) {
    return absl::InvalidArgumentError("a release needs a name, party and noise per block");
  }
  if (published.dim() != 2 || published.size(0) < 1) {
    return absl::InvalidArgumentError("the published table must be a non-empty 2-D table");
  }
  for (const OutputBlock& block : release.target.one_hot_blocks()) {
    if (block.offset + block.width > published.size(1) ||
        block.position_offset >= published.size(1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the published table has ", published.size(1),
                       " encoded columns; a released block ends past them"));
    }
  }
  for (const double noise : release.block_noise) {
    if (!(noise >= 0 && std::isfinite(noise)))
      return absl::InvalidArgumentError("noise must be finite and >= 0");
  }
  if (release.label_pairs &&
      (release.target.has_one_way() || !(release.label_keep > 0 && release.label_keep <= 1))) {
    return absl::InvalidArgumentError(
        "label pairs are pairs only, with a keep probability in (0, 1]");
  }
  return absl::OkStatus();
}

}  // namespace

double TotalVariation(const torch::Tensor& p, const torch::Tensor& q) {
  return 0.5 * (p.to(torch::kDouble) - q.to(torch::kDouble)).abs().sum().item<double>();
}

double DependenceOf(const torch::Tensor& joint) {
  const torch::Tensor p = joint.to(torch::kDouble);
  const torch::Tensor independent = p.sum(1, /*keepdim=*/true).mm(p.sum(0, /*keepdim=*/true));
  return TotalVariation(p, independent);
}

PublishedHistograms::PublishedHistograms(const std::vector<ReleasedHistograms>& releases)
    : releases_(releases) {
  for (const ReleasedHistograms& release : releases) {
    counts_.push_back(torch::zeros({release.target.probabilities().numel()}, torch::kDouble));
  }
}

absl::Status PublishedHistograms::Add(const std::vector<torch::Tensor>& chunk) {
  if (chunk.size() != releases_.size()) {
    return absl::InvalidArgumentError("one published encoding per release");
  }
  for (size_t r = 0; r < chunk.size(); ++r) RETURN_IF_ERROR(CheckRelease(releases_[r], chunk[r]));
  for (size_t r = 0; r < chunk.size(); ++r) {
    counts_[r] += releases_[r].target.TableCounts(chunk[r].to(torch::kFloat));
  }
  rows_ += chunk.empty() ? 0 : chunk.front().size(0);
  return absl::OkStatus();
}

torch::Tensor PublishedHistograms::Probabilities(size_t i) const {
  return counts_[i] / static_cast<double>(std::max<int64_t>(rows_, 1));
}

absl::StatusOr<v1::ReleasedFidelity> ScoreAgainstReleases(
    const std::vector<ReleasedHistograms>& releases, const std::vector<torch::Tensor>& published,
    int64_t records, int draws, uint64_t seed) {
  PublishedHistograms histograms(releases);
  RETURN_IF_ERROR(histograms.Add(published));
  return ScoreAgainstReleases(releases, histograms, records, draws, seed);
}

absl::StatusOr<v1::ReleasedFidelity> ScoreAgainstReleases(
    const std::vector<ReleasedHistograms>& releases, const PublishedHistograms& published,
    int64_t records, int draws, uint64_t seed) {
  if (releases.empty()) return absl::InvalidArgumentError("no released histogram to score against");
  if (published.rows() < 1) {
    return absl::InvalidArgumentError("the published table must be a non-empty 2-D table");
  }
  if (records < 1 || draws < 1) return absl::InvalidArgumentError("records and draws must be >= 1");
  const double n = static_cast<double>(records);
  std::mt19937_64 rng(seed);
  v1::ReleasedFidelity report;
  report.set_records(records);
  double distances = 0, noise_distances = 0;
  for (size_t r = 0; r < releases.size(); ++r) {
    const ReleasedHistograms& release = releases[r];
    const MarginalTarget& target = release.target;
    const torch::Tensor released = target.probabilities();
    const torch::Tensor table = published.Probabilities(r);
    const std::vector<int64_t> sizes = target.HistogramSizes();
    const int one_way = target.has_one_way() ? target.blocks() : 0;
    int64_t at = 0;
    for (size_t h = 0; h < sizes.size(); ++h) {
      const bool is_pair = static_cast<int>(h) >= one_way;
      const int first = is_pair ? target.pair_blocks()[h - one_way].first : static_cast<int>(h);
      const int owner = is_pair ? target.pair_blocks()[h - one_way].second : static_cast<int>(h);
      const torch::Tensor released_h = released.narrow(0, at, sizes[h]);
      const torch::Tensor published_h = table.narrow(0, at, sizes[h]);
      at += sizes[h];
      v1::ReleasedHistogramFidelity* score = report.add_histograms();
      score->set_party(release.block_parties[owner]);
      score->set_histogram(
          is_pair ? absl::StrCat(release.block_names[first], " x ", release.block_names[owner])
                  : release.block_names[owner]);
      score->set_kind(release.label_pairs ? "label_pair" : is_pair ? "pair" : "marginal");
      score->set_cells(sizes[h]);
      score->set_distance(TotalVariation(published_h, released_h));
      const int categories = release.label_pairs ? target.one_hot_blocks()[first].width : 0;
      ASSIGN_OR_RETURN(const double noise_distance,
                       NoiseDistance(released_h, categories, release.label_keep,
                                     release.block_noise[owner], n, draws, rng));
      if (release.label_pairs) {
        v1::LabelDependence* dependence = report.add_label_dependence();
        dependence->set_party(score->party());
        dependence->set_histogram(score->histogram());
        dependence->set_released(DependenceOf(released_h.reshape({categories, -1})));
        dependence->set_published(DependenceOf(published_h.reshape({categories, -1})));
      }
      score->set_noise_distance(noise_distance);
      distances += score->distance();
      noise_distances += score->noise_distance();
    }
  }
  if (report.histograms().empty())
    return absl::InvalidArgumentError("no released histogram to score against");
  report.set_score(1.0 - distances / report.histograms_size());
  report.set_noise_floor(noise_distances / report.histograms_size());
  return report;
}

}  // namespace vfsynth
