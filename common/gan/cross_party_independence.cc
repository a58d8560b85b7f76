#include "common/gan/cross_party_independence.h"

#include "common/gan/marginal_target.h"

namespace vfsynth {

CrossPartyIndependence::CrossPartyIndependence(const std::vector<const TableEncoder*>& encoders,
                                               const std::string& excluded_column) {
  int party_offset = 0;
  std::vector<int> blocks;
  for (const TableEncoder* encoder : encoders) {
    std::vector<int64_t> columns;
    const absl::StatusOr<OutputBlock> excluded = excluded_column.empty()
                                                     ? absl::NotFoundError("")
                                                     : encoder->CategoricalBlock(excluded_column);
    int kept = 0;
    for (const OutputBlock& block : OneHotBlocks(encoder->blocks())) {
      if (excluded.ok() && excluded->offset == block.offset) continue;
      for (int c = 0; c < block.width; ++c) columns.push_back(party_offset + block.offset + c);
      ++kept;
    }
    for (int earlier : blocks) pairs_ += earlier * kept;
    blocks.push_back(kept);
    columns_.push_back(torch::tensor(columns, torch::kLong));
    party_offset += encoder->width();
  }
}

torch::Tensor CrossPartyIndependence::Loss(const torch::Tensor& fake) const {
  torch::Tensor loss = torch::zeros({}, fake.options());
  const double rows = static_cast<double>(fake.size(0));
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& columns : columns_) parts.push_back(fake.index_select(1, columns));
  for (size_t i = 0; i < parts.size(); ++i) {
    for (size_t j = i + 1; j < parts.size(); ++j) {
      if (parts[i].size(1) == 0 || parts[j].size(1) == 0) continue;
      // The floor keeps the logs finite where a cell's batch mean underflows.
      const torch::Tensor joint = (parts[i].t().mm(parts[j]) / rows).clamp_min(1e-12);
      const torch::Tensor product =
          (parts[i].mean(0).unsqueeze(1) * parts[j].mean(0).unsqueeze(0)).clamp_min(1e-12);
      loss = loss + (joint * (joint.log() - product.log())).sum();
    }
  }
  return loss;
}

}  // namespace vfsynth
