#ifndef VFSYNTH_SERVER_CORE_LABEL_PAIR_EXCHANGE_H_
#define VFSYNTH_SERVER_CORE_LABEL_PAIR_EXCHANGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/data/encoder.h"
#include "common/gan/marginal_target.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// The curator's side of the label-pair release (common/gan/label_pairs.h), before
// training: takes the holder's randomized labels, hands them to the other parties, collects
// their tables and builds G's target. Thread-safe; no gRPC types. A party that calls
// again (it restarted, or the curator did) must send what it sent before: a release is
// never replaced by another one.
class LabelPairExchange {
 public:
  // `encoders` (roster order, kept by the caller) are the registered schemas; the one
  // party whose schema has categorical column `column` holds the label. `rows`: the
  // aligned records.
  static absl::StatusOr<std::unique_ptr<LabelPairExchange>> Create(
      const std::string& column, std::vector<const TableEncoder*> encoders,
      std::vector<std::string> roster, int64_t rows);

  int holder() const { return holder_; }

  // The holder's call stores its labels and returns at once; every other party's
  // returns the labels once they are in (DEADLINE_EXCEEDED at `deadline`).
  absl::StatusOr<v1::ShareLabelsResponse> ShareLabels(int party,
                                                      const v1::ShareLabelsRequest& request,
                                                      absl::Time deadline);
  // Stores a non-holder's tables (checked against the labels and its blocks).
  absl::Status ReleasePairs(int party, const v1::LabelPairsRequest& request);
  // Blocks until every party besides the holder released; G's target.
  absl::StatusOr<MarginalTarget> AwaitTarget(absl::Time deadline);
  // Makes every current and future wait return `reason`.
  void Cancel(absl::Status reason);

 private:
  LabelPairExchange(std::vector<const TableEncoder*> encoders, std::vector<std::string> roster,
                    int holder, OutputBlock label, int64_t rows);

  const std::vector<const TableEncoder*> encoders_;
  const std::vector<std::string> roster_;
  const int holder_;
  const OutputBlock label_;  // in the holder's encoding
  const int64_t rows_;

  mutable absl::Mutex mu_;
  std::optional<v1::ShareLabelsRequest> labels_ ABSL_GUARDED_BY(mu_);
  std::string labels_digest_ ABSL_GUARDED_BY(mu_);
  std::vector<std::optional<v1::LabelPairsRequest>> releases_ ABSL_GUARDED_BY(mu_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_LABEL_PAIR_EXCHANGE_H_
