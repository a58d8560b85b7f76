#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "client/cli/command_registry.h"
#include "common/base/status_macros.h"
#include "common/base/writable_directory.h"
#include "common/config/config.h"
#include "common/data/csv.h"
#include "common/gan/reference_trainer.h"

ABSL_FLAG(std::string, config, "", "train-local: run config JSON (LocalRunConfig)");
ABSL_FLAG(int, rounds, -1,
          "train-local: override training.rounds; audit: the shadow runs' rounds (-1: the "
          "mode's default, 50; marginals: 300 fit steps); privacy plan (horizontal): "
          "training.rounds (-1: the plan's)");
ABSL_FLAG(int64_t, rows, -1,
          "train-local, synthesize: synthetic rows to write (overrides output.rows; synthesize: "
          "the published table's by default)");
ABSL_FLAG(std::string, output, "",
          "train-local, synthesize: the synthetic CSV to write (train-local: overrides "
          "output.synthetic_csv)");

namespace vfsynth {

namespace {

absl::Status RunTrainLocalCommand(const std::vector<std::string>& args) {
  if (absl::GetFlag(FLAGS_config).empty()) {
    return absl::InvalidArgumentError("train-local needs --config");
  }
  // --rounds and --rows are checked like the settings they replace.
  ASSIGN_OR_RETURN(v1::LocalRunConfig config,
                   LoadLocalRunConfig(absl::GetFlag(FLAGS_config), [](v1::LocalRunConfig* c) {
                     if (absl::GetFlag(FLAGS_rounds) >= 0)
                       c->mutable_training()->set_rounds(absl::GetFlag(FLAGS_rounds));
                     if (absl::GetFlag(FLAGS_rows) >= 0)
                       c->mutable_output()->set_rows(absl::GetFlag(FLAGS_rows));
                   }));
  if (!absl::GetFlag(FLAGS_output).empty()) {
    config.mutable_output()->set_synthetic_csv(absl::GetFlag(FLAGS_output));
  }
  if (config.output().synthetic_csv().empty()) {
    return absl::InvalidArgumentError("no output file: set output.synthetic_csv or --output");
  }
  RETURN_IF_ERROR(CheckWritableDirectoryFor(config.output().synthetic_csv(), "output"));
  ASSIGN_OR_RETURN(auto trainer, ReferenceTrainer::Create(config));
  spdlog::info("training {} rounds (batch {}, n_critic {}, seed {})", config.training().rounds(),
               config.training().batch_size(), config.training().n_critic(),
               config.training().seed());
  RETURN_IF_ERROR(trainer->Train());
  const int64_t rows =
      config.output().rows() > 0 ? config.output().rows() : trainer->aligned_rows();
  ASSIGN_OR_RETURN(const CsvTable synthetic, trainer->Synthesize(rows));
  RETURN_IF_ERROR(WriteCsv(config.output().synthetic_csv(), synthetic));
  spdlog::info("wrote {} synthetic rows to {}", rows, config.output().synthetic_csv());
  return absl::OkStatus();
}

const CommandRegistration kRegistration(
    "train-local", {"train-local  --config C.json [--rounds N] [--rows N] [--output F.csv]",
                    &RunTrainLocalCommand});

}  // namespace
}  // namespace vfsynth
