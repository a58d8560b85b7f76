#ifndef VFSYNTH_COMMON_FEDERATED_WAE_TABLE_H_
#define VFSYNTH_COMMON_FEDERATED_WAE_TABLE_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/data/csv.h"
#include "common/data/encoder.h"
#include "common/nn/wae.h"

namespace vfsynth {

// The autoencoder's view of a table in the schema's encoding: values in [0, 1], the
// targets of its binary cross-entropy. One-hot blocks stay as they are; a scalar block
// (a value or a within-bin position in [-1, 1]) becomes (v + 1) / 2.
torch::Tensor WaeInputs(const EncodedTable& table, const std::vector<OutputBlock>& blocks);

// A table's rows grouped by user: the rows of each distinct name in `user_of_row`, in
// order of first appearance. `user_of_row` empty: every row is a user of its own, named by
// `row_names`.
struct UserRows {
  std::vector<torch::Tensor> rows;  // per user: its rows of `inputs`
  std::vector<std::string> names;
};
UserRows GroupByUser(const torch::Tensor& inputs, const std::vector<std::string>& user_of_row,
                     const std::vector<std::string>& row_names);

// `rows` rows from the decoder: z ~ N(0, I) drawn from `seed`, the logits' sigmoid with
// scalar blocks mapped back to [-1, 1] and each one-hot block's category drawn in
// proportion to its probabilities (from the same seed), decoded by `encoder`.
CsvTable SampleWaeTable(Wae& model, const TableEncoder& encoder, int64_t rows, uint64_t seed);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_FEDERATED_WAE_TABLE_H_
