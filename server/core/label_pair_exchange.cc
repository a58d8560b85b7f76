#include "server/core/label_pair_exchange.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/gan/label_pairs.h"
#include "common/nn/wire_tensor.h"
#include "common/protocol/tensor_codec.h"

namespace vfsynth {

absl::StatusOr<std::unique_ptr<LabelPairExchange>> LabelPairExchange::Create(
    const std::string& column, std::vector<const TableEncoder*> encoders,
    std::vector<std::string> roster, int64_t rows) {
  int holder = -1;
  OutputBlock label{};
  for (size_t p = 0; p < encoders.size(); ++p) {
    absl::StatusOr<OutputBlock> block = encoders[p]->CategoricalBlock(column);
    if (absl::IsNotFound(block.status())) continue;
    if (!block.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("training.label_column: party '", roster[p],
                                                     "': ", block.status().message()));
    }
    if (holder >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("training.label_column '", column,
                                                     "' is held by both '", roster[holder],
                                                     "' and '", roster[p], "'"));
    }
    holder = static_cast<int>(p);
    label = *block;
  }
  if (holder < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("training.label_column '", column, "' is in no party's schema"));
  }
  bool pairable = false;
  for (size_t p = 0; p < encoders.size(); ++p) {
    if (static_cast<int>(p) != holder && !OneHotBlocks(encoders[p]->blocks()).empty())
      pairable = true;
  }
  if (!pairable) {
    return absl::InvalidArgumentError(
        absl::StrCat("training.label_column '", column,
                     "': no other party has a categorical or binned column to pair it with"));
  }
  return std::unique_ptr<LabelPairExchange>(
      new LabelPairExchange(std::move(encoders), std::move(roster), holder, label, rows));
}

LabelPairExchange::LabelPairExchange(std::vector<const TableEncoder*> encoders,
                                     std::vector<std::string> roster, int holder, OutputBlock label,
                                     int64_t rows)
    : encoders_(std::move(encoders)),
      roster_(std::move(roster)),
      holder_(holder),
      label_(label),
      rows_(rows) {
  releases_.resize(encoders_.size());
}

absl::StatusOr<v1::ShareLabelsResponse> LabelPairExchange::ShareLabels(
    int party, const v1::ShareLabelsRequest& request, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (!cancelled_.ok()) return cancelled_;
  v1::ShareLabelsResponse response;
  response.set_categories(label_.width);
  if (party == holder_) {
    if (request.labels_size() != rows_) {
      return absl::InvalidArgumentError(absl::StrCat("'", roster_[party], "' sent ",
                                                     request.labels_size(), " labels for ", rows_,
                                                     " aligned records"));
    }
    for (const int32_t label : request.labels()) {
      if (label < 0 || label >= label_.width) {
        return absl::InvalidArgumentError(
            absl::StrCat("label ", label, " is not a category index in [0, ", label_.width, ")"));
      }
    }
    if (!(request.epsilon() > 0 && std::isfinite(request.epsilon()))) {
      return absl::InvalidArgumentError(
          "the label release needs a finite randomized-response epsilon > 0");
    }
    if (labels_.has_value()) {
      if (labels_->SerializeAsString() != request.SerializeAsString()) {
        return absl::FailedPreconditionError(
            absl::StrCat("'", roster_[party],
                         "' sent other labels than before: a label release is never replaced"));
      }
      return response;
    }
    labels_ = request;
    labels_digest_ =
        LabelsDigest(std::vector<int32_t>(request.labels().begin(), request.labels().end()));
    spdlog::info(
        "label pairs: '{}' released {} labels by randomized response ({} categories, epsilon "
        "{:.3f}, "
        "keeps a label with probability {:.3f})",
        roster_[party], rows_, label_.width, request.epsilon(),
        LabelKeepProbability(request.epsilon(), label_.width));
    return response;
  }
  if (request.labels_size() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", roster_[party], "' does not hold the label"));
  }
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return labels_.has_value() || !cancelled_.ok();
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    return absl::DeadlineExceededError(
        absl::StrCat("'", roster_[holder_], "' did not release its labels in time"));
  }
  if (!cancelled_.ok()) return cancelled_;
  *response.mutable_labels() = labels_->labels();
  return response;
}

absl::Status LabelPairExchange::ReleasePairs(int party, const v1::LabelPairsRequest& request) {
  if (party == holder_) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", roster_[party], "' holds the label: it releases no label pairs"));
  }
  const int64_t cells = LabelPairCells(label_.width, OneHotBlocks(encoders_[party]->blocks()));
  RETURN_IF_ERROR(ValidateTensor(request.counts(), {cells},
                                 absl::StrCat(roster_[party], "'s label-pair counts"),
                                 /*max_bytes=*/std::max<int64_t>(cells * 4, 1)));
  absl::MutexLock lock(&mu_);
  if (!cancelled_.ok()) return cancelled_;
  if (!labels_.has_value() || request.labels_sha256() != labels_digest_) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", roster_[party], "' counted other labels than the ones released"));
  }
  auto& stored = releases_[party];
  if (stored.has_value()) {
    if (stored->SerializeAsString() != request.SerializeAsString()) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", roster_[party],
                       "' sent other label-pair counts than before: a release is never replaced"));
    }
    return absl::OkStatus();
  }
  stored = request;
  spdlog::info("label pairs: '{}' released {} counts", roster_[party], cells);
  return absl::OkStatus();
}

absl::StatusOr<MarginalTarget> LabelPairExchange::AwaitTarget(absl::Time deadline) {
  std::vector<torch::Tensor> counts(encoders_.size());
  double label_epsilon = 0;
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      if (!cancelled_.ok()) return true;
      for (size_t p = 0; p < releases_.size(); ++p) {
        if (static_cast<int>(p) != holder_ && !releases_[p].has_value()) return false;
      }
      return labels_.has_value();
    };
    if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
      std::string missing = labels_.has_value() ? "" : roster_[holder_];
      for (size_t p = 0; p < releases_.size(); ++p) {
        if (static_cast<int>(p) != holder_ && !releases_[p].has_value()) {
          absl::StrAppend(&missing, missing.empty() ? "" : ", ", roster_[p]);
        }
      }
      return absl::DeadlineExceededError(
          absl::StrCat("label pairs: no release in time from ", missing));
    }
    if (!cancelled_.ok()) return cancelled_;
    label_epsilon = labels_->epsilon();
    for (size_t p = 0; p < releases_.size(); ++p) {
      counts[p] =
          static_cast<int>(p) == holder_ ? torch::zeros({0}) : FromWire(releases_[p]->counts());
    }
  }
  return LabelPairTarget(encoders_, holder_, label_, counts, label_epsilon, rows_);
}

void LabelPairExchange::Cancel(absl::Status reason) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.ok()) cancelled_ = std::move(reason);
}

}  // namespace vfsynth
