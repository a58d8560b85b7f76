#ifndef VFSYNTH_COMMON_MARGINALS_JOINT_COLUMNS_H_
#define VFSYNTH_COMMON_MARGINALS_JOINT_COLUMNS_H_

#include <string>
#include <vector>

#include "common/data/encoder.h"
#include "common/marginals/measurement_plan.h"
#include "vfsynth/v1/privacy_plan.pb.h"

namespace vfsynth::marginals {

// The one-hot blocks a measured-marginals run measures, over its parties' encoders in
// roster order: each block at its offset in the joint encoding (G's output), and the
// public sizes the plan is resolved from (PlannedColumn: holder, name, width, refined
// 1-way cells, whether it is the label).
struct JointColumns {
  std::vector<OutputBlock> blocks;
  std::vector<v1::PlannedColumn> columns;  // one per block
};

// The curator builds them from the registered encoders, the one-process reference from
// the reference trainer's; a party from its own encoder alone (`party`: its roster index;
// the blocks then at its own offsets), to find its columns in the curator's plan.
JointColumns JointColumnsOf(const std::vector<const TableEncoder*>& encoders,
                            const std::string& label_column, int position_bins);
JointColumns PartyColumnsOf(const TableEncoder& encoder, int party, const std::string& label_column,
                            int position_bins);

// The plan's histograms as the measurement code takes them.
std::vector<Measurement> MeasurementsOf(const v1::PrivacyPlan& plan);

}  // namespace vfsynth::marginals

#endif  // VFSYNTH_COMMON_MARGINALS_JOINT_COLUMNS_H_
