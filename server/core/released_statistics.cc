#include "server/core/released_statistics.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/gan/label_pairs.h"
#include "common/gan/released_fidelity.h"
#include "common/nn/wire_tensor.h"
#include "common/privacy/mode_traits.h"
#include "common/protocol/tensor_codec.h"

namespace vfsynth {
namespace {

// Rows of `published` in `encoder`'s encoding.
absl::StatusOr<torch::Tensor> Encoded(const CsvTable& published, const TableEncoder& encoder) {
  ASSIGN_OR_RETURN(EncodeResult result, encoder.Encode(published, "the published table"));
  return torch::from_blob(result.table.values.data(), {result.table.rows, result.table.width},
                          torch::kFloat32)
      .clone();
}

// Published rows encoded at a time: the table's encoding is never held whole.
constexpr size_t kReportChunkRows = 65536;

// The Gaussian's std per count of a release of `histograms` histograms.
double CountNoise(const v1::PrivacyPlan& plan, int histograms) {
  if (!privacy::TraitsOf(plan.privacy().mode()).may_release_marginals) return 0;
  return plan.marginal_noise_multiplier() * HistogramReleaseSensitivity(histograms);
}

}  // namespace

ReleasedStatistics::ReleasedStatistics(std::vector<std::string> roster, MarginalOptions options)
    : roster_(std::move(roster)), options_(options) {
  marginals_.resize(roster_.size());
}

absl::Status ReleasedStatistics::AddMarginals(int party, const TableEncoder& encoder,
                                              const v1::MarginalsRequest& request) {
  const int64_t cells = MarginalTarget::ReleaseCells(encoder.blocks(), options_);
  RETURN_IF_ERROR(ValidateTensor(request.probabilities(), {cells},
                                 absl::StrCat(roster_[party], "'s marginal release"),
                                 /*max_bytes=*/std::max<int64_t>(cells * 4, 1)));
  absl::StatusOr<MarginalTarget> target =
      MarginalTarget::FromRelease(encoder.blocks(), options_, FromWire(request.probabilities()));
  if (!target.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", roster_[party], "'s marginal release: ", target.status().message()));
  }
  absl::MutexLock lock(&mu_);
  std::optional<MarginalTarget>& stored = marginals_[party];
  if (stored.has_value()) {
    if (!torch::equal(stored->probabilities(), target->probabilities())) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", roster_[party],
                       "' sent another marginal release than before: a release is never replaced"));
    }
    return absl::OkStatus();
  }
  spdlog::info(
      "marginal release: '{}' released {} histograms ({} values) for the report on the published "
      "table",
      roster_[party], target->blocks() + target->pairs(), cells);
  stored = *std::move(target);
  return absl::OkStatus();
}

void ReleasedStatistics::SetLabelPairs(MarginalTarget target, int holder, std::string column) {
  absl::MutexLock lock(&mu_);
  label_pairs_ = LabelPairs{std::move(target), holder, std::move(column)};
}

absl::StatusOr<std::optional<v1::ReleasedFidelity>> ReleasedStatistics::Report(
    const CsvTable& published, const std::vector<const TableEncoder*>& encoders,
    const v1::PrivacyPlan& plan) const {
  if (encoders.size() != roster_.size()) return absl::InvalidArgumentError("one encoder per party");
  std::vector<ReleasedHistograms> releases;
  // Per release: the parties whose encodings, side by side, are its encoding.
  std::vector<std::vector<size_t>> encodings;
  absl::MutexLock lock(&mu_);
  for (size_t p = 0; p < roster_.size(); ++p) {
    if (!marginals_[p].has_value()) continue;
    const MarginalTarget& target = *marginals_[p];
    ReleasedHistograms release{target, {}, {}, {}};
    const double noise = CountNoise(plan, target.blocks() + target.pairs());
    for (const OutputBlock& block : target.one_hot_blocks()) {
      release.block_names.push_back(encoders[p]->BlockName(block));
      release.block_parties.push_back(roster_[p]);
      release.block_noise.push_back(noise);
    }
    releases.push_back(std::move(release));
    encodings.push_back({p});
  }
  if (label_pairs_.has_value()) {
    // LabelPairTarget's blocks: the label, then every other party's one-hot blocks.
    const MarginalTarget& target = label_pairs_->target;
    ReleasedHistograms release{
        target, {label_pairs_->column}, {roster_[label_pairs_->holder]}, {0.0}};
    release.label_pairs = true;
    release.label_keep =
        LabelKeepProbability(plan.label_epsilon(), target.one_hot_blocks().front().width);
    for (size_t p = 0; p < roster_.size(); ++p) {
      if (static_cast<int>(p) == label_pairs_->holder) continue;
      const std::vector<OutputBlock> own = OneHotBlocks(encoders[p]->blocks());
      for (const OutputBlock& block : own) {
        release.block_names.push_back(encoders[p]->BlockName(block));
        release.block_parties.push_back(roster_[p]);
        release.block_noise.push_back(CountNoise(plan, static_cast<int>(own.size())));
      }
    }
    releases.push_back(std::move(release));
    std::vector<size_t> all(roster_.size());
    std::iota(all.begin(), all.end(), 0);
    encodings.push_back(std::move(all));
  }
  if (releases.empty()) return std::nullopt;
  PublishedHistograms histograms(releases);
  for (size_t begin = 0; begin < published.rows.size(); begin += kReportChunkRows) {
    const size_t end = std::min(published.rows.size(), begin + kReportChunkRows);
    CsvTable rows;  // these rows, copied once for every party's encoder
    rows.header = published.header;
    rows.rows.assign(published.rows.begin() + static_cast<std::ptrdiff_t>(begin),
                     published.rows.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<torch::Tensor> slices;  // each party's encoding of these rows
    for (const TableEncoder* encoder : encoders) {
      ASSIGN_OR_RETURN(torch::Tensor slice, Encoded(rows, *encoder));
      slices.push_back(std::move(slice));
    }
    std::vector<torch::Tensor> chunk;
    for (const std::vector<size_t>& parties : encodings) {
      std::vector<torch::Tensor> parts;
      for (const size_t p : parties) parts.push_back(slices[p]);
      chunk.push_back(parts.size() == 1 ? parts.front() : torch::cat(parts, 1));
    }
    RETURN_IF_ERROR(histograms.Add(chunk));
  }
  return ScoreAgainstReleases(releases, histograms, plan.records());
}

}  // namespace vfsynth
