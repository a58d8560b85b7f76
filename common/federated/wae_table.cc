#include "common/federated/wae_table.h"

#include <ATen/CPUGeneratorImpl.h>

#include "absl/container/flat_hash_map.h"

namespace vfsynth {
namespace {

// Columns of the scalar (kTanh) blocks.
std::vector<int64_t> ScalarColumns(const std::vector<OutputBlock>& blocks) {
  std::vector<int64_t> columns;
  for (const OutputBlock& block : blocks) {
    if (block.kind == BlockKind::kTanh) columns.push_back(block.offset);
  }
  return columns;
}

}  // namespace

torch::Tensor WaeInputs(const EncodedTable& table, const std::vector<OutputBlock>& blocks) {
  torch::Tensor inputs = torch::from_blob(const_cast<float*>(table.values.data()),
                                          {table.rows, table.width}, torch::kFloat32)
                             .clone();
  for (int64_t column : ScalarColumns(blocks)) {
    inputs.select(1, column).add_(1.0).mul_(0.5);
  }
  return inputs;
}

UserRows GroupByUser(const torch::Tensor& inputs, const std::vector<std::string>& user_of_row,
                     const std::vector<std::string>& row_names) {
  UserRows users;
  if (user_of_row.empty()) {
    for (int64_t row = 0; row < inputs.size(0); ++row) {
      users.rows.push_back(inputs.slice(0, row, row + 1));
      users.names.push_back(row_names[row]);
    }
    return users;
  }
  absl::flat_hash_map<std::string, size_t> index;
  std::vector<std::vector<int64_t>> members;
  for (int64_t row = 0; row < static_cast<int64_t>(user_of_row.size()); ++row) {
    auto [it, added] = index.try_emplace(user_of_row[row], members.size());
    if (added) {
      members.emplace_back();
      users.names.push_back(user_of_row[row]);
    }
    members[it->second].push_back(row);
  }
  for (const std::vector<int64_t>& rows : members) {
    users.rows.push_back(inputs.index_select(0, torch::tensor(rows, torch::kLong)));
  }
  return users;
}

CsvTable SampleWaeTable(Wae& model, const TableEncoder& encoder, int64_t rows, uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const torch::Tensor z = torch::randn({rows, model->latent()}, generator);
  // Decoded a chunk of rows at a time: the decoder's probabilities for a million rows
  // would take gigabytes beside the table.
  constexpr int64_t kChunkRows = 65536;
  CsvTable table;
  for (int64_t start = 0; start < rows; start += kChunkRows) {
    const int64_t count = std::min(kChunkRows, rows - start);
    torch::Tensor values =
        torch::sigmoid(model->DecodeLogits(z.narrow(0, start, count))).contiguous();
    for (const OutputBlock& block : encoder.blocks()) {
      torch::Tensor span = values.narrow(1, block.offset, block.width);
      if (block.kind == BlockKind::kTanh) {
        span.mul_(2.0).sub_(1.0);
        continue;
      }
      // The block's category drawn in proportion to the decoder's probabilities, not its
      // argmax, which gives every row of a region of z the same value and so sharpens the
      // table's marginals towards their modes.
      const torch::Tensor drawn =
          torch::multinomial(span + 1e-12, 1, /*replacement=*/false, generator);
      span.zero_().scatter_(1, drawn, 1.0);
    }
    CsvTable chunk = encoder.Decode(values.data_ptr<float>(), count);
    if (start == 0) {
      table = std::move(chunk);
      table.rows.reserve(static_cast<size_t>(rows));
      continue;
    }
    for (std::vector<std::string>& row : chunk.rows) table.rows.push_back(std::move(row));
  }
  if (rows <= 0) table = encoder.Decode(nullptr, 0);
  return table;
}

}  // namespace vfsynth
