#include "common/eval/reference_sampler.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/data/split.h"
#include "common/model/config.h"
#include "common/model/reference_trainer.h"
#include "common/util/file_io.h"
#include "common/util/proto_json.h"
#include "common/util/status_macros.h"

namespace vfsynth {
namespace {

absl::StatusOr<CsvTable> TrainAndSample(const v1::Schema& schema,
                                        const ShadowTrainingOptions& options,
                                        const CsvTable& training, uint64_t seed) {
  v1::PartiesFile parties = options.parties;
  if (parties.parties_size() == 0) {
    v1::PartySpec* all = parties.add_parties();
    all->set_name("all");
    for (const v1::Column& column : schema.columns()) all->add_columns(column.name());
  }
  ASSIGN_OR_RETURN(const SplitResult split, SplitTable(training, schema, parties));
  const std::string dir = absl::StrCat(options.work_dir, "/shadow_", seed);
  RETURN_IF_ERROR(MakeDirectories(dir));
  v1::LocalRunConfig config;
  config.set_run_id(absl::StrCat("audit-", seed));
  *config.mutable_model() = options.model;
  *config.mutable_training() = options.training;
  config.mutable_training()->set_seed(seed);
  for (const PartyTable& party : split.parties) {
    const std::string csv = absl::StrCat(dir, "/", party.name, ".csv");
    const std::string schema_path = absl::StrCat(dir, "/", party.name, ".schema.json");
    RETURN_IF_ERROR(WriteCsv(csv, party.table));
    ASSIGN_OR_RETURN(const std::string schema_json, ToJson(party.schema));
    RETURN_IF_ERROR(WriteFileAtomically(schema_path, schema_json));
    v1::PartyDataConfig* entry = config.add_parties();
    entry->set_name(party.name);
    entry->set_data(csv);
    entry->set_schema(schema_path);
  }
  RETURN_IF_ERROR(ResolveLocalRunConfig("", &config));
  absl::StatusOr<CsvTable> synthetic;
  try {
    ASSIGN_OR_RETURN(auto trainer, ReferenceTrainer::Create(config));
    RETURN_IF_ERROR(trainer->Train());
    const int64_t rows = options.synthetic_rows > 0 ? options.synthetic_rows : trainer->aligned_rows();
    synthetic = trainer->Synthesize(rows);
  } catch (const c10::Error& e) {
    synthetic = absl::InternalError(absl::StrCat("shadow training failed: ", e.what_without_backtrace()));
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return synthetic;
}

}  // namespace

ShadowTrainingOptions SmallShadowConfig(int rounds) {
  ShadowTrainingOptions options;
  v1::ModelConfig& m = options.model;
  m.set_z_dim(32);
  m.add_generator_hidden(128);
  m.add_generator_hidden(128);
  m.add_feature_hidden(64);
  m.set_feature_dim(32);
  m.add_shared_hidden(64);
  v1::TrainingConfig& t = options.training;
  t.set_rounds(rounds);
  t.set_batch_size(64);
  t.set_n_critic(2);
  t.set_threads(1);  // shadow models are many and small; intra-op threads only add overhead
  t.set_log_every(1 << 30);
  return options;
}

SyntheticSampler MakeReferenceTrainerSampler(const v1::Schema& schema,
                                             ShadowTrainingOptions options) {
  return [schema, options](const CsvTable& training, uint64_t seed) {
    return TrainAndSample(schema, options, training, seed);
  };
}

}  // namespace vfsynth
