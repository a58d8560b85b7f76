#include "common/marginals/joint_columns.h"

#include "common/gan/marginal_target.h"

namespace vfsynth::marginals {
namespace {

// Appends `encoder`'s one-hot blocks, shifted by `offset` in the joint encoding.
void AppendParty(const TableEncoder& encoder, int party, int offset,
                 const std::string& label_column, int position_bins, JointColumns* joint) {
  for (OutputBlock block : OneHotBlocks(encoder.blocks())) {
    v1::PlannedColumn column;
    column.set_party(party);
    column.set_name(encoder.BlockName(block));
    column.set_width(block.width);
    column.set_cells(block.position_offset >= 0 ? block.position_slots * position_bins +
                                                      (block.width - block.position_slots)
                                                : block.width);
    column.set_label(column.name() == label_column);
    joint->columns.push_back(std::move(column));
    block.offset += offset;
    if (block.position_offset >= 0) block.position_offset += offset;
    joint->blocks.push_back(block);
  }
}

}  // namespace

JointColumns JointColumnsOf(const std::vector<const TableEncoder*>& encoders,
                            const std::string& label_column, int position_bins) {
  JointColumns joint;
  int offset = 0;
  for (size_t p = 0; p < encoders.size(); ++p) {
    AppendParty(*encoders[p], static_cast<int>(p), offset, label_column, position_bins, &joint);
    offset += encoders[p]->width();
  }
  return joint;
}

JointColumns PartyColumnsOf(const TableEncoder& encoder, int party, const std::string& label_column,
                            int position_bins) {
  JointColumns own;
  AppendParty(encoder, party, 0, label_column, position_bins, &own);
  return own;
}

std::vector<Measurement> MeasurementsOf(const v1::PrivacyPlan& plan) {
  std::vector<Measurement> measurements;
  for (const v1::MeasuredHistogram& histogram : plan.measurements()) {
    Measurement m;
    m.blocks.assign(histogram.columns().begin(), histogram.columns().end());
    m.cells = histogram.cells();
    m.cross_party = histogram.cross_party();
    m.sigma = histogram.sigma();
    measurements.push_back(std::move(m));
  }
  return measurements;
}

}  // namespace vfsynth::marginals
