// `vfsynth synthesize`: draws a table from the curator's publishable generator
// artefact (generator.vfsg), offline. G is public once trained, so this is
// post-processing: more rows, another label temperature, or a table from a run whose
// curator stopped before publishing (docs/operations.md).

#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/command_registry.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/csv.h"
#include "common/privacy/privacy_plan.h"
#include "server/core/generator_artefact.h"
#include "server/core/generator_synthesis.h"

ABSL_DECLARE_FLAG(std::string, config);
ABSL_DECLARE_FLAG(int64_t, rows);
ABSL_DECLARE_FLAG(std::string, output);
ABSL_FLAG(
    std::string, generator, "",
    "synthesize: the generator artefact the curator writes (<checkpoint_dir>/generator.vfsg)");
ABSL_FLAG(std::string, label_column, "", "synthesize: override output.label_column");
ABSL_FLAG(double, label_temperature, -1, "synthesize: override output.label_temperature");

namespace vfsynth {

namespace {

// The artefact's publication settings with the command's overrides.
absl::StatusOr<v1::OutputConfig> OutputSettings(const v1::GeneratorHeader& header) {
  v1::OutputConfig output = header.output();
  if (!absl::GetFlag(FLAGS_label_column).empty()) {
    output.set_label_column(absl::GetFlag(FLAGS_label_column));
    output.clear_label_temperature();  // the default for a label column, unless given below
  }
  if (absl::GetFlag(FLAGS_label_temperature) >= 0)
    output.set_label_temperature(absl::GetFlag(FLAGS_label_temperature));
  if (absl::GetFlag(FLAGS_rows) > 0) output.set_rows(absl::GetFlag(FLAGS_rows));
  output.set_synthetic_csv(absl::GetFlag(FLAGS_output));
  RETURN_IF_ERROR(ResolveOutputConfig("", v1::TrainingConfig(), &output));
  return output;
}

absl::Status RunSynthesizeCommand(const std::vector<std::string>&) {
  if (!absl::GetFlag(FLAGS_config).empty()) {
    return absl::InvalidArgumentError(
        "synthesize takes no --config: the generator artefact (--generator) holds the run's "
        "settings");
  }
  if (absl::GetFlag(FLAGS_generator).empty() || absl::GetFlag(FLAGS_output).empty()) {
    return absl::InvalidArgumentError("synthesize needs --generator and --output");
  }
  const std::string path = absl::GetFlag(FLAGS_generator);
  ASSIGN_OR_RETURN(const GeneratorArtefact artefact, ReadGeneratorArtefact(path));
  if (artefact.header.round() < artefact.header.rounds()) {
    spdlog::warn("{} holds G after round {} of {}: the table comes from an unfinished run", path,
                 artefact.header.round(), artefact.header.rounds());
  }
  ASSIGN_OR_RETURN(const v1::OutputConfig output, OutputSettings(artefact.header));
  ASSIGN_OR_RETURN(const CsvTable table, SynthesizeFromGenerator(artefact, output));
  RETURN_IF_ERROR(WriteCsv(output.synthetic_csv(), table));
  // The table carries the run's guarantee, as the curator's published one does.
  RETURN_IF_ERROR(WritePrivacyStatement(output.synthetic_csv(), artefact.header.privacy()));
  spdlog::info("wrote {} rows of run '{}' (round {}) to {}{}", output.rows(),
               artefact.header.run_id(), artefact.header.round(), output.synthetic_csv(),
               output.label_column().empty()
                   ? ""
                   : absl::StrCat(", '", output.label_column(), "' at temperature ",
                                  output.label_temperature()));
  return absl::OkStatus();
}

const CommandRegistration kRegistration(
    "synthesize",
    {"synthesize  --generator CHECKPOINT_DIR/generator.vfsg --output F.csv [--rows N] "
     "[--label_column C] [--label_temperature T]",
     &RunSynthesizeCommand,
     {"config", "rows", "output"}});

}  // namespace
}  // namespace vfsynth
