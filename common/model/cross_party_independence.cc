#include "common/model/cross_party_independence.h"

#include "common/model/marginal_target.h"

namespace vfsynth {

CrossPartyIndependence::CrossPartyIndependence(const std::vector<const TableEncoder*>& encoders) {
  std::vector<Block> blocks;
  int party_offset = 0;
  for (int party = 0; party < static_cast<int>(encoders.size()); ++party) {
    for (const OutputBlock& block : OneHotBlocks(encoders[party]->blocks())) {
      blocks.push_back({party, party_offset + block.offset, block.width});
    }
    party_offset += encoders[party]->width();
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (size_t j = i + 1; j < blocks.size(); ++j) {
      if (blocks[i].party != blocks[j].party) pairs_.emplace_back(blocks[i], blocks[j]);
    }
  }
}

torch::Tensor CrossPartyIndependence::Loss(const torch::Tensor& fake) const {
  torch::Tensor loss = torch::zeros({}, fake.options());
  const double rows = static_cast<double>(fake.size(0));
  for (const auto& [a, b] : pairs_) {
    const torch::Tensor left = fake.narrow(1, a.offset, a.width);
    const torch::Tensor right = fake.narrow(1, b.offset, b.width);
    // The floor keeps the logs finite where a cell's batch mean underflows.
    const torch::Tensor joint = (left.t().mm(right) / rows).clamp_min(1e-12);
    const torch::Tensor product = (left.mean(0).unsqueeze(1) * right.mean(0).unsqueeze(0)).clamp_min(1e-12);
    loss = loss + (joint * (joint.log() - product.log())).sum();
  }
  return loss;
}

}  // namespace vfsynth
