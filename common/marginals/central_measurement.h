#ifndef VFSYNTH_COMMON_MARGINALS_CENTRAL_MEASUREMENT_H_
#define VFSYNTH_COMMON_MARGINALS_CENTRAL_MEASUREMENT_H_

#include <torch/torch.h>

#include <vector>

#include "absl/status/statusor.h"
#include "common/data/encoder.h"
#include "common/gan/marginal_target.h"
#include "common/marginals/measurement_plan.h"
#include "common/random/secure_random.h"

namespace vfsynth::marginals {

// The release shape of `measurements` over the joint one-hot blocks: their 1-way
// histograms, then their pairs, as MarginalTarget orders them. The plan must list every
// block's 1-way histogram first, in block order (PlanMeasurements does).
absl::StatusOr<MarginalTarget> ReleaseShape(const std::vector<OutputBlock>& one_hot_blocks,
                                            const std::vector<Measurement>& measurements,
                                            int position_bins);

// What the parties release, computed in one process from the joint encoded table (the
// one-process reference and tests; the daemons never hold it): each histogram's counts
// with the noise its holders add (one draw of σ for a party's own histogram, one per
// holder across two), projected onto the distributions over the table's rows. Without
// `noise`, the exact histograms.
absl::StatusOr<MarginalTarget> MeasureCentrally(const torch::Tensor& joint_table,
                                                const MarginalTarget& shape,
                                                const std::vector<Measurement>& measurements,
                                                SecureRandom* noise);

// Noised counts of every histogram, in the shape's order, to the target: each projected
// onto the distributions over `rows` records (ProjectToTotal; the record count is public).
absl::StatusOr<MarginalTarget> TargetFromCounts(const MarginalTarget& shape,
                                                const std::vector<torch::Tensor>& counts,
                                                int64_t rows);

}  // namespace vfsynth::marginals

#endif  // VFSYNTH_COMMON_MARGINALS_CENTRAL_MEASUREMENT_H_
