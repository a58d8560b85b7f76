// `vfsynth audit`: shadow-model membership inference (leave-one-out) against the
// reference trainer; writes DIR/audit.json with attack accuracy/AUC and ε bounds.
#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "client/command_registry.h"
#include "common/data/csv.h"
#include "common/data/schema.h"
#include "common/eval/eval_table.h"
#include "common/eval/membership_audit.h"
#include "common/eval/reference_sampler.h"
#include "common/util/file_io.h"
#include "common/util/proto_json.h"
#include "common/util/status_macros.h"

// Defined in split_command.cc, train_local_command.cc and eval_command.cc.
ABSL_DECLARE_FLAG(std::string, schema);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, parties);
ABSL_DECLARE_FLAG(int, rounds);
ABSL_DECLARE_FLAG(std::string, real);
ABSL_DECLARE_FLAG(int, eval_threads);

ABSL_FLAG(int, audit_models, 10, "audit: shadow generators per side (with / without the target)");
ABSL_FLAG(int64_t, audit_rows, 500, "audit: training-set size D sampled from --real");
ABSL_FLAG(int64_t, audit_target_row, -1, "audit: target row of D (-1: most isolated record)");
ABSL_FLAG(int64_t, audit_synthetic_rows, 0, "audit: rows per synthetic set (0: |D|)");
ABSL_FLAG(double, audit_delta, 1e-5, "audit: delta of the empirical epsilon bound");
ABSL_FLAG(int64_t, audit_seed, 0, "audit: seed for D, shadow models and the attack");

namespace vfsynth {
namespace {

constexpr int kDefaultAuditRounds = 50;

absl::Status RunAuditCommand(const std::vector<std::string>& args) {
  const std::string real_path = absl::GetFlag(FLAGS_real);
  const std::string schema_path = absl::GetFlag(FLAGS_schema);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (real_path.empty() || schema_path.empty() || out.empty()) {
    return absl::InvalidArgumentError("audit needs --real, --schema and --out");
  }
  ASSIGN_OR_RETURN(const v1::Schema schema, LoadSchema(schema_path));
  ASSIGN_OR_RETURN(const CsvTable real, ReadCsv(real_path));
  const uint64_t seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_audit_seed));
  CsvTable data;
  data.header = real.header;
  for (int64_t i : SampleRows(static_cast<int64_t>(real.rows.size()), absl::GetFlag(FLAGS_audit_rows), seed)) {
    data.rows.push_back(real.rows[i]);
  }

  const int rounds = absl::GetFlag(FLAGS_rounds) >= 0 ? absl::GetFlag(FLAGS_rounds) : kDefaultAuditRounds;
  ShadowTrainingOptions shadow = SmallShadowConfig(rounds);
  if (!absl::GetFlag(FLAGS_parties).empty()) {
    RETURN_IF_ERROR(LoadJsonFile(absl::GetFlag(FLAGS_parties), &shadow.parties));
  }
  shadow.work_dir = out + "/shadow_work";
  shadow.synthetic_rows = absl::GetFlag(FLAGS_audit_synthetic_rows);
  RETURN_IF_ERROR(MakeDirectories(shadow.work_dir));

  AuditOptions options;
  options.shadow_models = absl::GetFlag(FLAGS_audit_models);
  options.target_row = absl::GetFlag(FLAGS_audit_target_row);
  options.delta = absl::GetFlag(FLAGS_audit_delta);
  options.threads = absl::GetFlag(FLAGS_eval_threads);
  options.seed = seed;
  spdlog::info("audit: {} rows, {} shadow models per side, {} rounds each", data.rows.size(),
               options.shadow_models, rounds);
  ASSIGN_OR_RETURN(const AuditResult result,
                   RunMembershipAudit(data, schema, MakeReferenceTrainerSampler(schema, shadow), options));
  RETURN_IF_ERROR(WriteFileAtomically(out + "/audit.json", AuditJson(result)));
  spdlog::info(
      "audit: target row {}, attack accuracy {:.3f}, AUC {:.3f} on {}+{} held-out sets, "
      "epsilon lower bound {:.3f} (delta {}), {:.1f} s ({:.2f} s per shadow model); wrote {}/audit.json",
      result.target_row, result.accuracy, result.auc, result.test_in, result.test_out,
      result.epsilon.lower_bound, options.delta, result.seconds, result.seconds_per_model, out);
  return absl::OkStatus();
}

const CommandRegistration kRegistration(
    "audit", {"audit        --real R.csv --schema S.json --out DIR [--parties P.json] "
              "[--audit-models M] [--audit-rows N] [--rounds R]",
              &RunAuditCommand});

}  // namespace
}  // namespace vfsynth
