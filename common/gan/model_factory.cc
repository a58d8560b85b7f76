#include "common/gan/model_factory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/gan/stream_purposes.h"

namespace vfsynth {

namespace {

// The first encoded column of `column`'s one-hot block in the joint layout; `field` names
// the setting in errors.
absl::StatusOr<int> JointCategoricalOffset(const std::vector<const TableEncoder*>& encoders,
                                           const std::string& column, const char* field) {
  int offset = 0;
  for (const TableEncoder* encoder : encoders) {
    absl::StatusOr<OutputBlock> block = encoder->CategoricalBlock(column);
    if (block.ok()) return offset + block->offset;
    if (!absl::IsNotFound(block.status())) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", block.status().message()));
    }
    offset += encoder->width();
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " '", column, "' is in no party's schema"));
}

// Appends joint samples to `table` decoded: every party's columns, in party order (the
// header with the first chunk).
void AppendDecoded(const torch::Tensor& samples, const std::vector<const TableEncoder*>& encoders,
                   CsvTable* table) {
  const int64_t rows = samples.size(0);
  const size_t first = table->rows.size();
  const bool header = table->header.empty();
  table->rows.resize(first + static_cast<size_t>(rows));
  int offset = 0;
  for (const TableEncoder* encoder : encoders) {
    const torch::Tensor slice = samples.narrow(1, offset, encoder->width()).contiguous();
    offset += encoder->width();
    CsvTable decoded = encoder->Decode(slice.data_ptr<float>(), rows);
    if (header) {
      table->header.insert(table->header.end(), decoded.header.begin(), decoded.header.end());
    }
    for (int64_t r = 0; r < rows; ++r) {
      auto& source = decoded.rows[static_cast<size_t>(r)];
      auto& target = table->rows[first + static_cast<size_t>(r)];
      target.insert(target.end(), std::make_move_iterator(source.begin()),
                    std::make_move_iterator(source.end()));
    }
  }
}

}  // namespace

absl::Status CheckConditionedColumn(const v1::ModelConfig& model,
                                    const std::vector<const TableEncoder*>& encoders) {
  const std::string column = model.experimental().conditioned_column();
  if (column.empty()) return absl::OkStatus();
  return JointCategoricalOffset(encoders, column, "model.experimental.conditioned_column").status();
}

Generator MakeGenerator(const v1::ModelConfig& model, const v1::TrainingConfig& training,
                        const std::vector<const TableEncoder*>& encoders) {
  std::vector<int> widths;
  int total = 0;
  for (const TableEncoder* encoder : encoders) {
    widths.push_back(encoder->width());
    total += encoder->width();
  }
  Generator generator = SeededModule<Generator>(CuratorStreamKey(training.seed()),
                                                absl::StrCat(streams::kInit, "/generator"), model,
                                                JointLayout(encoders), total, widths);
  const std::string column = model.experimental().conditioned_column();
  if (!column.empty()) {
    const absl::StatusOr<int> offset =
        JointCategoricalOffset(encoders, column, "model.experimental.conditioned_column");
    TORCH_CHECK(offset.ok(), offset.status().ToString());
    generator->ConditionBlock(*offset);
  }
  return generator;
}

std::unique_ptr<GeneratorAverage> MakeGeneratorAverage(
    const v1::ModelConfig& model, const v1::TrainingConfig& training,
    const std::vector<const TableEncoder*>& encoders, const Generator& live) {
  if (training.experimental().generator_average_decay() <= 0) return nullptr;
  return std::make_unique<GeneratorAverage>(MakeGenerator(model, training, encoders), live,
                                            training.experimental().generator_average_decay());
}

ScoreNet MakeSharedCritic(const v1::ModelConfig& model, uint64_t seed, int num_parties) {
  const std::vector<int> hidden(model.shared_hidden().begin(), model.shared_hidden().end());
  return SeededModule<ScoreNet>(CuratorStreamKey(seed),
                                absl::StrCat(streams::kInit, "/shared-critic"),
                                model.experimental().pack() * num_parties * model.feature_dim(),
                                hidden, model.experimental().leaky_slope());
}

FeatureNet MakePartyFeatureNet(const v1::ModelConfig& model, const std::string& party_secret,
                               int width) {
  return PrivateModule<FeatureNet>(party_secret, absl::StrCat(streams::kInit, "/feat"), width,
                                   model);
}

ScoreNet MakePartyHead(const v1::ModelConfig& model, const std::string& party_secret) {
  return PrivateModule<ScoreNet>(party_secret, absl::StrCat(streams::kInit, "/head"),
                                 model.feature_dim(), std::vector<int>{},
                                 model.experimental().leaky_slope());
}

std::string ReferencePartySecret(uint64_t seed, const std::string& party) {
  return absl::StrCat(CuratorStreamKey(seed), "/party/", party);
}

std::unique_ptr<torch::optim::Adam> MakeAdam(const std::vector<torch::Tensor>& params, double lr,
                                             const v1::TrainingConfig& training) {
  return std::make_unique<torch::optim::Adam>(
      params, torch::optim::AdamOptions(lr).betas({training.beta1(), training.beta2()}));
}

std::vector<OutputBlock> JointLayout(const std::vector<const TableEncoder*>& encoders) {
  std::vector<OutputBlock> blocks;
  int offset = 0;
  for (const TableEncoder* encoder : encoders) {
    for (OutputBlock block : encoder->blocks()) {
      block.offset += offset;
      blocks.push_back(block);
    }
    offset += encoder->width();
  }
  return blocks;
}

absl::StatusOr<std::map<int, double>> PublicationTemperatures(
    const v1::OutputConfig& output, const std::vector<const TableEncoder*>& encoders) {
  std::map<int, double> temperature;
  if (output.label_column().empty()) return temperature;
  ASSIGN_OR_RETURN(const int offset,
                   JointCategoricalOffset(encoders, output.label_column(), "output.label_column"));
  if (output.label_temperature() != 1) temperature[offset] = output.label_temperature();
  return temperature;
}

CsvTable SampleSyntheticTable(Generator& generator, uint64_t seed, int64_t rows,
                              const std::vector<const TableEncoder*>& encoders,
                              const std::map<int, double>& temperature) {
  const std::string key = CuratorStreamKey(seed);
  const bool was_training = generator->is_training();
  generator->eval();
  torch::NoGradGuard no_grad;
  CsvTable table;
  table.rows.reserve(static_cast<size_t>(std::max<int64_t>(rows, 0)));
  constexpr int64_t kChunk = 4096;
  for (int64_t start = 0, index = 0; start < rows; start += kChunk, ++index) {
    const int64_t n = std::min(kChunk, rows - start);
    const torch::Tensor z =
        generator->SampleLatent(n, StreamGenerator(key, streams::kSynthesis, 2 * index));
    const torch::Tensor samples =
        generator
            ->SampleHard(z, StreamGenerator(key, streams::kSynthesis, 2 * index + 1), temperature)
            .contiguous();
    AppendDecoded(samples, encoders, &table);
  }
  generator->train(was_training);
  return table;
}

}  // namespace vfsynth
