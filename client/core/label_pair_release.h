#ifndef VFSYNTH_CLIENT_CORE_LABEL_PAIR_RELEASE_H_
#define VFSYNTH_CLIENT_CORE_LABEL_PAIR_RELEASE_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/encoder.h"
#include "vfsynth/v1/curator.pb.h"

namespace vfsynth {

// A party's side of the label-pair release (common/gan/label_pairs.h). Each release
// is drawn once per run and kept durably at `path` before it is sent: a party that
// restarts sends the same values again, so the one ledger charge covers every send.
// A kept release of another run id is replaced.

// The label's holder: the randomized labels of `table`'s rows (aligned order) for
// `label`, randomized response with `epsilon`.
absl::StatusOr<v1::ShareLabelsRequest> HolderLabelRelease(const std::string& path,
                                                          const std::string& run_id,
                                                          const std::string& party,
                                                          const torch::Tensor& table,
                                                          const OutputBlock& label, double epsilon);

// Every other party: its label-pair tables against the labels in `labels`.
// FAILED_PRECONDITION if this party kept tables counted against other labels.
absl::StatusOr<v1::LabelPairsRequest> LabelPairRelease(
    const std::string& path, const std::string& run_id, const std::string& party,
    const v1::ShareLabelsResponse& labels, const torch::Tensor& table,
    const std::vector<OutputBlock>& blocks, double noise_multiplier);

}  // namespace vfsynth

#endif  // VFSYNTH_CLIENT_CORE_LABEL_PAIR_RELEASE_H_
