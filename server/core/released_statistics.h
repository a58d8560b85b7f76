#ifndef VFSYNTH_SERVER_CORE_RELEASED_STATISTICS_H_
#define VFSYNTH_SERVER_CORE_RELEASED_STATISTICS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/config/config.h"
#include "common/data/csv.h"
#include "common/data/encoder.h"
#include "common/gan/marginal_target.h"
#include "server/core/released_fidelity_file.h"
#include "vfsynth/v1/curator.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"
#include "vfsynth/v1/released_fidelity.pb.h"

namespace vfsynth {

// What the curator keeps of the statistics a vertical run released under DP, for its
// report on the published table (common/gan/released_fidelity.h): each party's marginal
// release and the label-pair tables. Thread-safe; no gRPC types. As with the label
// pairs, a party that sends its release again must send the same one.
class ReleasedStatistics {
 public:
  ReleasedStatistics(std::vector<std::string> roster, MarginalOptions options);

  // Party `party`'s marginal release, for the blocks of `encoder` (its schema).
  absl::Status AddMarginals(int party, const TableEncoder& encoder,
                            const v1::MarginalsRequest& request);
  // The debiased label-pair tables (LabelPairTarget) of label `column`, held by `holder`.
  void SetLabelPairs(MarginalTarget target, int holder, std::string column);

  // The report on `published` against every release kept, with each release's noise from
  // `plan` (nullopt when nothing was released). `encoders` in roster order.
  absl::StatusOr<std::optional<v1::ReleasedFidelity>> Report(
      const CsvTable& published, const std::vector<const TableEncoder*>& encoders,
      const v1::PrivacyPlan& plan) const;

 private:
  struct LabelPairs {
    MarginalTarget target;
    int holder;
    std::string column;
  };

  const std::vector<std::string> roster_;
  const MarginalOptions options_;
  mutable absl::Mutex mu_;
  std::vector<std::optional<MarginalTarget>> marginals_ ABSL_GUARDED_BY(mu_);
  std::optional<LabelPairs> label_pairs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vfsynth

#endif  // VFSYNTH_SERVER_CORE_RELEASED_STATISTICS_H_
