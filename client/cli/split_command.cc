#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_join.h"
#include "client/cli/command_registry.h"
#include "common/base/status_macros.h"
#include "common/data/split.h"

ABSL_FLAG(std::string, input, "", "split: joint CSV to cut into party files");
ABSL_FLAG(std::string, schema, "", "split: schema JSON of the joint CSV");
ABSL_FLAG(std::string, parties, "", "split: parties JSON ({parties:[{name, columns}]})");
ABSL_FLAG(std::string, out, "", "split/eval: output directory");
ABSL_FLAG(bool, skip_bad_rows, false, "drop (and count) malformed rows instead of failing");
ABSL_FLAG(double, holdout_fraction, 0,
          "split: hold this share of rows out of the party files (OUT/holdout.csv; the rest: "
          "OUT/train.csv)");
ABSL_FLAG(uint64_t, holdout_seed, 0, "split: seed of the holdout draw");

namespace vfsynth {

namespace {

absl::Status RunSplitCommand(const std::vector<std::string>& args) {
  const std::string input = absl::GetFlag(FLAGS_input);
  const std::string schema = absl::GetFlag(FLAGS_schema);
  const std::string parties = absl::GetFlag(FLAGS_parties);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (input.empty() || schema.empty() || parties.empty() || out.empty()) {
    return absl::InvalidArgumentError("split needs --input, --schema, --parties and --out");
  }
  ASSIGN_OR_RETURN(
      const SplitResult result,
      SplitFiles(input, schema, parties, out, absl::GetFlag(FLAGS_skip_bad_rows),
                 {absl::GetFlag(FLAGS_holdout_fraction), absl::GetFlag(FLAGS_holdout_seed)}));
  for (const PartyTable& party : result.parties) {
    spdlog::info("wrote {}/{}.csv ({} rows, {} columns) and {}/{}.schema.json", out, party.name,
                 party.table.rows.size(), party.schema.columns_size(), out, party.name);
  }
  if (absl::GetFlag(FLAGS_holdout_fraction) > 0) {
    spdlog::info("held out {}/holdout.csv; the parties' rows are {}/train.csv", out, out);
  }
  if (!result.unassigned_columns.empty()) {
    spdlog::warn("columns held by no party (not written): {}",
                 absl::StrJoin(result.unassigned_columns, ", "));
  }
  return absl::OkStatus();
}

const CommandRegistration kRegistration(
    "split", {"split        --input T.csv --schema S.json --parties P.json --out DIR "
              "[--skip-bad-rows] [--holdout-fraction F --holdout-seed S]",
              &RunSplitCommand});

}  // namespace
}  // namespace vfsynth
