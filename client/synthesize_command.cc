// `vfsynth synthesize`: draws a table from a curator checkpoint, offline. G is public
// once trained, so this is post-processing: more rows, another label temperature, or a
// table from a run whose curator stopped before publishing (docs/operations.md).

#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/command_registry.h"
#include "common/data/csv.h"
#include "common/data/schema.h"
#include "common/model/config.h"
#include "common/util/status_macros.h"
#include "server/checkpoint_synthesis.h"

ABSL_DECLARE_FLAG(std::string, config);
ABSL_DECLARE_FLAG(int64_t, rows);
ABSL_DECLARE_FLAG(std::string, output);
ABSL_FLAG(std::string, party_schemas, "",
          "synthesize: the parties' public schemas, comma-separated, in the curator config's roster order");
ABSL_FLAG(std::string, checkpoint, "", "synthesize: curator checkpoint (default: the config's checkpoint_dir)");
ABSL_FLAG(std::string, label_column, "", "synthesize: override output.label_column");
ABSL_FLAG(double, label_temperature, -1, "synthesize: override output.label_temperature");

namespace vfsynth {

namespace {

absl::StatusOr<std::vector<TableEncoder>> RosterEncoders(const v1::CuratorConfig& config) {
  const std::vector<std::string> paths = absl::StrSplit(absl::GetFlag(FLAGS_party_schemas), ',');
  if (static_cast<int>(paths.size()) != config.parties_size()) {
    return absl::InvalidArgumentError(absl::StrCat("--party_schemas names ", paths.size(), " schemas; the roster has ",
                                                   config.parties_size(), " parties (one schema each, in order)"));
  }
  std::vector<TableEncoder> encoders;
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(const v1::Schema schema, LoadSchema(path));
    absl::StatusOr<TableEncoder> encoder = TableEncoder::Create(schema);
    if (!encoder.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", encoder.status().message()));
    encoders.push_back(std::move(*encoder));
  }
  return encoders;
}

absl::Status ApplyOutputFlags(v1::CuratorConfig& config) {
  v1::OutputConfig* output = config.mutable_output();
  if (!absl::GetFlag(FLAGS_label_column).empty()) {
    output->set_label_column(absl::GetFlag(FLAGS_label_column));
    output->clear_label_temperature();  // the default for a label column, unless given below
  }
  if (absl::GetFlag(FLAGS_label_temperature) >= 0) {
    output->set_label_temperature(absl::GetFlag(FLAGS_label_temperature));
  }
  if (absl::GetFlag(FLAGS_rows) > 0) output->set_rows(absl::GetFlag(FLAGS_rows));
  output->set_synthetic_csv(absl::GetFlag(FLAGS_output));
  return ResolveOutputConfig("", config.training(), output);
}

absl::Status RunSynthesizeCommand(const std::vector<std::string>&) {
  if (absl::GetFlag(FLAGS_config).empty() || absl::GetFlag(FLAGS_party_schemas).empty() ||
      absl::GetFlag(FLAGS_output).empty()) {
    return absl::InvalidArgumentError("synthesize needs --config, --party_schemas and --output");
  }
  ASSIGN_OR_RETURN(v1::CuratorConfig config, LoadCuratorConfig(absl::GetFlag(FLAGS_config)));
  RETURN_IF_ERROR(ApplyOutputFlags(config));
  if (config.output().rows() <= 0) {
    return absl::InvalidArgumentError("pass --rows: the checkpoint does not hold the run's record count");
  }
  ASSIGN_OR_RETURN(const std::vector<TableEncoder> owned, RosterEncoders(config));
  std::vector<const TableEncoder*> encoders;
  for (const TableEncoder& encoder : owned) encoders.push_back(&encoder);
  ASSIGN_OR_RETURN(const CsvTable table, SynthesizeFromCheckpoint(config, encoders, absl::GetFlag(FLAGS_checkpoint)));
  RETURN_IF_ERROR(WriteCsv(config.output().synthetic_csv(), table));
  spdlog::info("wrote {} rows to {}{}", config.output().rows(), config.output().synthetic_csv(),
               config.output().label_column().empty()
                   ? ""
                   : absl::StrCat(", '", config.output().label_column(), "' at temperature ",
                                  config.output().label_temperature()));
  return absl::OkStatus();
}

const CommandRegistration kRegistration(
    "synthesize", {"synthesize  --config curator.json --party_schemas A.json,B.json,... --output F.csv --rows N "
                   "[--checkpoint P] [--label_column C] [--label_temperature T]",
                   &RunSynthesizeCommand});

}  // namespace
}  // namespace vfsynth
