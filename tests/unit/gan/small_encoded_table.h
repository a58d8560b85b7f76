#ifndef VFSYNTH_TESTS_UNIT_GAN_SMALL_ENCODED_TABLE_H_
#define VFSYNTH_TESTS_UNIT_GAN_SMALL_ENCODED_TABLE_H_

#include <torch/torch.h>

#include <vector>

#include "common/data/encoder.h"

namespace vfsynth {

// Columns: a 3-way one-hot block, a tanh scalar, a 2-way one-hot block.
inline std::vector<OutputBlock> SmallTableBlocks() {
  return {{BlockKind::kSoftmax, 0, 3}, {BlockKind::kTanh, 3, 1}, {BlockKind::kSoftmax, 4, 2}};
}

// Four rows of those blocks. Block 1: categories 0,0,1,2 -> 1/2, 1/4, 1/4; block 2:
// 1,1,1,0 -> 1/4, 3/4.
inline torch::Tensor SmallTable() {
  return torch::tensor({{1.0, 0.0, 0.0, 0.5, 0.0, 1.0},
                        {1.0, 0.0, 0.0, -0.5, 0.0, 1.0},
                        {0.0, 1.0, 0.0, 0.1, 0.0, 1.0},
                        {0.0, 0.0, 1.0, 0.9, 1.0, 0.0}},
                       torch::kFloat32);
}

}  // namespace vfsynth

#endif  // VFSYNTH_TESTS_UNIT_GAN_SMALL_ENCODED_TABLE_H_
