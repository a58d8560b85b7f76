#ifndef VFSYNTH_COMMON_EVAL_AUDIT_CANARY_H_
#define VFSYNTH_COMMON_EVAL_AUDIT_CANARY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

// An outlier record for the membership audit's target, in `data`'s header order: each
// numeric column at the declared bound farther from `data`'s median, each categorical
// column at its least frequent declared category in `data` (the first of a tie), a
// fresh id if `data` has the schema's id column, and empty cells for columns the schema
// does not declare. Built from the schema's declarations, so it is a valid record that
// no generator needs real data to produce, yet far from every real record.
absl::StatusOr<std::vector<std::string>> CanaryRecord(const CsvTable& data,
                                                      const v1::Schema& schema);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_AUDIT_CANARY_H_
