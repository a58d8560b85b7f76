#ifndef VFSYNTH_COMMON_GAN_MODEL_FACTORY_H_
#define VFSYNTH_COMMON_GAN_MODEL_FACTORY_H_

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "common/data/encoder.h"
#include "common/nn/generator_average.h"
#include "common/nn/networks.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth {

// One place that builds every network from its named init stream, so the reference
// trainer, the curator and the parties construct bit-identical starting weights.
// G over the parties' columns, in party order (`encoders` give each party's layout), its
// init stream from training.seed, with the head of model.experimental().conditioned_column()
// conditioned on the rest of the row. Throws c10::Error if that column is no party's categorical
// column; CheckConditionedColumn() tells first.
Generator MakeGenerator(const v1::ModelConfig& model, const v1::TrainingConfig& training,
                        const std::vector<const TableEncoder*>& encoders);
absl::Status CheckConditionedColumn(const v1::ModelConfig& model,
                                    const std::vector<const TableEncoder*>& encoders);
// The moving average of `live` that synthesis publishes, or null when
// training.experimental.generator_average_decay is 0 (the last iterate is published).
std::unique_ptr<GeneratorAverage> MakeGeneratorAverage(
    const v1::ModelConfig& model, const v1::TrainingConfig& training,
    const std::vector<const TableEncoder*>& encoders, const Generator& live);
// D_s over model.experimental.pack packed rows of the K parties' features: pack * K * d_h inputs.
ScoreNet MakeSharedCritic(const v1::ModelConfig& model, uint64_t seed, int num_parties);
// A party's feat_k and head_k, initialised from `party_secret`, which only that party holds.
FeatureNet MakePartyFeatureNet(const v1::ModelConfig& model, const std::string& party_secret,
                               int width);
ScoreNet MakePartyHead(const v1::ModelConfig& model, const std::string& party_secret);
// The party secret the single-process reference trainer gives `party`: a function of the
// run's public seed, which a daemon's test can hand its party to reproduce the reference.
// A party daemon draws its own from the OS.
std::string ReferencePartySecret(uint64_t seed, const std::string& party);
std::unique_ptr<torch::optim::Adam> MakeAdam(const std::vector<torch::Tensor>& params, double lr,
                                             const v1::TrainingConfig& training);

// Concatenates parties' output blocks into G's layout (offsets shifted per party).
std::vector<OutputBlock> JointLayout(const std::vector<const TableEncoder*>& encoders);

// The most rows one synthesis may draw (memory: rows × G's output width floats).
inline constexpr int64_t kMaxSynthesisRows = 10'000'000;

// Draws `rows` publication samples (hard one-hots) from G in eval mode, from the
// curator's synthesis stream, and decodes them into one table: every party's columns, in
// party order. A chunk at a time, so memory holds the table and one chunk of G's output.
// `temperature` as in GeneratorImpl::SampleHard.
CsvTable SampleSyntheticTable(Generator& generator, uint64_t seed, int64_t rows,
                              const std::vector<const TableEncoder*>& encoders,
                              const std::map<int, double>& temperature = {});

// The sampling temperatures output.label_column / label_temperature ask for, keyed by
// the label block's offset in G's joint layout; empty at temperature 1. An error names
// the column if no party holds it or it is not categorical.
absl::StatusOr<std::map<int, double>> PublicationTemperatures(
    const v1::OutputConfig& output, const std::vector<const TableEncoder*>& encoders);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_GAN_MODEL_FACTORY_H_
