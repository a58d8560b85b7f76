#ifndef VFSYNTH_COMMON_EVAL_FEATURES_H_
#define VFSYNTH_COMMON_EVAL_FEATURES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/eval/classifier.h"
#include "common/eval/eval_table.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// Features and labels for predicting one categorical column from all the others
// (or from all but `excluded`).
struct LabeledData {
  FeatureMatrix x;
  std::vector<int> y;  // category index of the target
  int num_classes = 0;
};

// One-hot categoricals (plus a missing slot when nullable); numerics scaled to
// [-1, 1] by the schema bounds (clipped), missing numerics as 0 plus an indicator
// when nullable. Rows with a missing target are dropped. The layout depends only on
// the schema, so real and synthetic features line up.
absl::StatusOr<LabeledData> MakeLabeledData(const EvalTable& table, const v1::Schema& schema,
                                            const std::string& target,
                                            const std::vector<std::string>& excluded = {});

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_FEATURES_H_
