#ifndef VFSYNTH_COMMON_MARGINALS_CENTRAL_MEASUREMENT_H_
#define VFSYNTH_COMMON_MARGINALS_CENTRAL_MEASUREMENT_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/encoder.h"
#include "common/gan/marginal_target.h"
#include "common/random/secure_random.h"
#include "vfsynth/v1/config.pb.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth::marginals {

// The parties' one-hot columns as a measured-marginals plan lists them, and where each
// sits in G's joint output.
struct MeasuredLayout {
  std::vector<v1::PlannedColumn> columns;  // public sizes, party order
  std::vector<OutputBlock> blocks;         // the same columns in G's joint layout
};
// `encoders` in party order; `label_column` is training.label_column ("" for none).
MeasuredLayout LayoutOf(const std::vector<const TableEncoder*>& encoders,
                        const std::string& label_column, const v1::MeasurementConfig& settings);

// The release shape of `plan`'s histograms over `blocks` (LayoutOf's): their 1-way
// histograms, then their pairs, as MarginalTarget orders them. The plan lists every
// column's 1-way histogram first, in column order (ResolveMarginalsPlan does).
// With `label_pairs_unmerged`, the pairs with the plan's label column see both blocks at
// full width (experiment).
absl::StatusOr<MarginalTarget> ReleaseShape(const std::vector<OutputBlock>& blocks,
                                            const v1::PrivacyPlan& plan,
                                            bool label_pairs_unmerged = false);

// Each histogram's noise variance per released count: σ² per holder adding noise.
std::vector<double> ReleaseVariances(const v1::PrivacyPlan& plan);

// The noised counts MeasureCentrally projects (shape order, float64).
absl::StatusOr<std::vector<torch::Tensor>> MeasureCounts(const torch::Tensor& joint_table,
                                                         const MarginalTarget& shape,
                                                         const v1::PrivacyPlan& plan,
                                                         SecureRandom* noise);

// What the parties release, computed in one process from the joint encoded table (the
// one-process reference and tests; the daemons never hold it): each histogram's counts
// with the noise its holders add (one draw of σ for a party's own histogram, one per
// holder across two), projected onto the distributions over the table's rows. Without
// `noise`, the exact histograms.
absl::StatusOr<MarginalTarget> MeasureCentrally(const torch::Tensor& joint_table,
                                                const MarginalTarget& shape,
                                                const v1::PrivacyPlan& plan, SecureRandom* noise);

// Noised counts of every histogram, in the shape's order, to the target: each projected
// onto the distributions over `rows` records (ProjectToTotal; the record count is public).
// With `consistency_rounds` > 0 and `variances` (ReleaseVariances), the counts are first
// made consistent (MarginalTarget::ConsistentCounts).
absl::StatusOr<MarginalTarget> TargetFromCounts(const MarginalTarget& shape,
                                                const std::vector<torch::Tensor>& counts,
                                                int64_t rows,
                                                const std::vector<double>& variances = {},
                                                int consistency_rounds = 0);

}  // namespace vfsynth::marginals

#endif  // VFSYNTH_COMMON_MARGINALS_CENTRAL_MEASUREMENT_H_
