// `vfsynth eval`: fidelity, utility and DCR metrics of a synthetic table against the
// real one, or (--party-config) against one party's own rows and columns; writes
// DIR/metrics.json and DIR/report.html.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli/command_registry.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/csv.h"
#include "common/data/party_data.h"
#include "common/data/schema.h"
#include "common/eval/evaluate.h"
#include "common/eval/report.h"
#include "common/postgres/postgres_source.h"

// Defined in split_command.cc.
ABSL_DECLARE_FLAG(std::string, schema);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, parties);
// Defined in status_command.cc.
ABSL_DECLARE_FLAG(std::string, party_config);

ABSL_FLAG(std::string, real, "", "eval/audit: the real joint CSV");
ABSL_FLAG(std::string, synthetic, "", "eval: the synthetic CSV");
ABSL_FLAG(std::string, target, "", "eval: categorical column to predict for utility (empty: skip)");
ABSL_FLAG(std::string, holdout, "",
          "eval: real rows the generator never saw (utility test set and DCR reference)");
ABSL_FLAG(int64_t, eval_max_rows, 0,
          "eval: subsample real and synthetic to this many rows (0: all)");
ABSL_FLAG(int64_t, eval_seed, 0, "eval: seed for sampling, 80/20 splits, AVD sets, models");
ABSL_FLAG(std::string, eval_models, "random_forest,logistic_regression,mlp",
          "eval: utility classifiers (comma list; empty: skip utility)");
ABSL_FLAG(int, eval_trees, 100, "eval: random forest trees");
ABSL_FLAG(int, eval_threads, 2, "eval/audit: worker threads");
ABSL_FLAG(int64_t, eval_dcr_rows, 1000, "eval: synthetic rows sampled for DCR");
ABSL_FLAG(
    std::string, privacy_statement, "",
    "eval: the run's privacy statement (the curator writes <table>.privacy.json beside the table); "
    "its guarantee per observer goes into the report");

namespace vfsynth {
namespace {

// The columns of the party that holds `target` in the layout at `path`.
absl::StatusOr<std::vector<std::string>> TargetPartyColumns(const std::string& path,
                                                            const std::string& target) {
  v1::PartiesFile layout;
  RETURN_IF_ERROR(LoadJsonFile(path, &layout));
  for (const v1::PartySpec& party : layout.parties()) {
    const std::vector<std::string> columns(party.columns().begin(), party.columns().end());
    if (std::find(columns.begin(), columns.end(), target) == columns.end()) continue;
    if (layout.parties_size() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("--parties ", path, " has one party: no other party's columns to predict '",
                       target, "' from"));
    }
    return columns;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("no party in --parties ", path, " holds the target '", target, "'"));
}

// What the synthetic table is scored against: the joint real table, or one party's.
struct EvalInputs {
  v1::Schema schema;
  CsvTable real;
  std::optional<CsvTable> holdout;
  std::string party;  // set for a party's own evaluation
};

absl::StatusOr<EvalInputs> JointInputs() {
  const std::string real_path = absl::GetFlag(FLAGS_real);
  const std::string schema_path = absl::GetFlag(FLAGS_schema);
  if (real_path.empty() || schema_path.empty()) {
    return absl::InvalidArgumentError(
        "eval needs --real and --schema (or a party's --party-config)");
  }
  EvalInputs inputs;
  ASSIGN_OR_RETURN(inputs.schema, LoadSchema(schema_path));
  ASSIGN_OR_RETURN(inputs.real, ReadCsv(real_path));
  if (!absl::GetFlag(FLAGS_holdout).empty()) {
    ASSIGN_OR_RETURN(inputs.holdout, ReadCsv(absl::GetFlag(FLAGS_holdout)));
  }
  return inputs;
}

// The party's data and schema, as its daemon reads them; a target must be its own.
absl::StatusOr<EvalInputs> PartyInputs(const std::string& config_path, const std::string& target) {
  for (const auto& [flag, value] :
       {std::pair<const char*, std::string>{"--real", absl::GetFlag(FLAGS_real)},
        {"--schema", absl::GetFlag(FLAGS_schema)},
        {"--holdout", absl::GetFlag(FLAGS_holdout)},
        {"--parties", absl::GetFlag(FLAGS_parties)}}) {
    if (!value.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--party-config scores the table on the party's own data and schema: leave out ", flag));
    }
  }
  ASSIGN_OR_RETURN(const v1::PartyConfig config, LoadPartyConfig(config_path));
  EvalInputs inputs;
  inputs.party = config.name();
  ASSIGN_OR_RETURN(inputs.schema, LoadSchema(config.schema()));
  if (config.has_postgres()) {
    ASSIGN_OR_RETURN(inputs.real, ReadPostgresRows(config.postgres(), PartyColumns(inputs.schema)));
  } else {
    ASSIGN_OR_RETURN(inputs.real, ReadCsv(config.data()));
  }
  if (!target.empty()) {
    std::vector<std::string> columns;
    for (const v1::Column& column : inputs.schema.columns()) columns.push_back(column.name());
    if (std::find(columns.begin(), columns.end(), target) == columns.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("party '", config.name(), "' does not hold --target '", target,
                       "'; its columns: ", absl::StrJoin(columns, ", ")));
    }
  }
  return inputs;
}

absl::Status RunEvalCommand(const std::vector<std::string>& args) {
  const std::string synthetic_path = absl::GetFlag(FLAGS_synthetic);
  const std::string out = absl::GetFlag(FLAGS_out);
  const std::string party_config = absl::GetFlag(FLAGS_party_config);
  if (synthetic_path.empty() || out.empty())
    return absl::InvalidArgumentError("eval needs --synthetic and --out");
  const std::string target = absl::GetFlag(FLAGS_target);
  ASSIGN_OR_RETURN(const EvalInputs inputs,
                   party_config.empty() ? JointInputs() : PartyInputs(party_config, target));
  ASSIGN_OR_RETURN(const CsvTable synthetic, ReadCsv(synthetic_path));

  EvalOptions options;
  options.max_rows = absl::GetFlag(FLAGS_eval_max_rows);
  options.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_eval_seed));
  options.utility_options.models =
      absl::StrSplit(absl::GetFlag(FLAGS_eval_models), ',', absl::SkipEmpty());
  options.utility = !options.utility_options.models.empty();
  options.utility_options.forest_trees = absl::GetFlag(FLAGS_eval_trees);
  options.utility_options.threads = absl::GetFlag(FLAGS_eval_threads);
  options.dcr_options.threads = absl::GetFlag(FLAGS_eval_threads);
  options.dcr_options.max_synthetic_rows = absl::GetFlag(FLAGS_eval_dcr_rows);
  if (target.empty()) spdlog::warn("no --target: utility metrics skipped");
  if (!absl::GetFlag(FLAGS_parties).empty()) {
    if (target.empty() || !options.utility) {
      return absl::InvalidArgumentError(
          "--parties (utility from the other parties' columns) needs --target and a model");
    }
    ASSIGN_OR_RETURN(options.target_party_columns,
                     TargetPartyColumns(absl::GetFlag(FLAGS_parties), target));
  }

  spdlog::info(
      "evaluating {} ({} rows) against {} ({} rows)", synthetic_path, synthetic.rows.size(),
      inputs.party.empty() ? absl::GetFlag(FLAGS_real) : "party '" + inputs.party + "'s own data",
      inputs.real.rows.size());
  ASSIGN_OR_RETURN(EvalResult result,
                   EvaluateTables(inputs.real, synthetic, inputs.schema, target, options,
                                  inputs.holdout.has_value() ? &*inputs.holdout : nullptr));
  result.party = inputs.party;
  if (!absl::GetFlag(FLAGS_privacy_statement).empty()) {
    v1::PrivacyPlan plan;
    RETURN_IF_ERROR(LoadJsonFile(absl::GetFlag(FLAGS_privacy_statement), &plan));
    if (plan.guarantees().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--privacy-statement ", absl::GetFlag(FLAGS_privacy_statement),
                       " states no guarantee: not a privacy statement"));
    }
    result.privacy = std::move(plan);
  }
  RETURN_IF_ERROR(MakeDirectories(out));
  RETURN_IF_ERROR(WriteFileAtomically(out + "/metrics.json", MetricsJson(result)));
  RETURN_IF_ERROR(
      WriteFileAtomically(out + "/report.html", RenderReportHtml(result, inputs.schema)));
  spdlog::info("wrote {}/metrics.json and {}/report.html in {:.1f} s", out, out, result.seconds);
  spdlog::info("summary: {}", SummaryLine(result));
  return absl::OkStatus();
}

const CommandRegistration kRegistration(
    "eval",
    {"eval         (--real R.csv --schema S.json | --party-config P.json) --synthetic S.csv --out "
     "DIR "
     "[--target COL] [--holdout H.csv] [--parties P.json] [--eval-max-rows N] [--eval-trees N] "
     "[--eval-models a,b] [--privacy-statement S.privacy.json]",
     &RunEvalCommand,
     {"schema", "out", "parties", "party_config"}});

}  // namespace
}  // namespace vfsynth
