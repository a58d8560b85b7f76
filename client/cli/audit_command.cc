// `vfsynth audit`: shadow-model membership inference (leave-one-out) against the
// daemons' training in a privacy mode; writes DIR/audit.json with the claimed ε beside
// the attack's accuracy, AUC and empirical ε lower bound.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli/command_registry.h"
#include "client/cli/shadow_training.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/data/csv.h"
#include "common/data/schema.h"
#include "common/eval/audit_canary.h"
#include "common/eval/eval_table.h"
#include "common/eval/membership_audit.h"
#include "common/privacy/privacy_plan.h"

// Defined in split_command.cc, train_local_command.cc, eval_command.cc and privacy_command.cc.
ABSL_DECLARE_FLAG(std::string, schema);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, parties);
ABSL_DECLARE_FLAG(int, rounds);
ABSL_DECLARE_FLAG(std::string, real);
ABSL_DECLARE_FLAG(int, eval_threads);
ABSL_DECLARE_FLAG(double, epsilon);

ABSL_FLAG(std::string, privacy, "none",
          "audit: privacy mode of the shadow models' training (none, dpsgd, strict, vflgan, "
          "gswgan, pate, marginals)");
ABSL_FLAG(bool, audit_canary, false,
          "audit: the target is an inserted outlier record built from the schema, not the most "
          "isolated real one");
ABSL_FLAG(std::string, audit_neighbour, "replace",
          "audit: the training set compared with D: 'replace' (the target swapped for a typical "
          "record of D, the adjacency the privacy modes are calibrated for) or 'remove' (D "
          "without the target)");
ABSL_FLAG(int, audit_models, 10, "audit: shadow generators per side (with / without the target)");
ABSL_FLAG(int64_t, audit_rows, 500, "audit: training-set size D sampled from --real");
ABSL_FLAG(int64_t, audit_target_row, -1, "audit: target row of D (-1: most isolated record)");
ABSL_FLAG(int64_t, audit_synthetic_rows, 0, "audit: rows per synthetic set (0: |D|)");
ABSL_FLAG(double, audit_delta, 1e-5,
          "audit: delta of the shadow runs' privacy and of the empirical epsilon bound");
ABSL_FLAG(int64_t, audit_seed, 0, "audit: seed for D, shadow models and the attack");

namespace vfsynth {
namespace {

// The claim against the published observer: the largest ε any shadow run planned.
void RecordClaim(const ShadowRun& run, PublishedClaim* claim) {
  const v1::ObserverGuarantee& published = Guarantee(run.plan, Observer::kPublished);
  if (published.has_epsilon_planned()) {
    claim->epsilon = std::max(claim->epsilon.value_or(0.0), published.epsilon_planned());
  } else {
    claim->not_dp = published.not_dp();
  }
}

// `sampler`, logging only errors from its second call on: every run logs the same
// plan, noise and warnings as the first.
SyntheticSampler QuietAfterFirstRun(SyntheticSampler sampler) {
  return [sampler = std::move(sampler), calls = 0](
             const CsvTable& training, uint64_t seed) mutable -> absl::StatusOr<CsvTable> {
    if (calls++ == 0) return sampler(training, seed);
    const spdlog::level::level_enum level = spdlog::get_level();
    spdlog::set_level(std::max(level, spdlog::level::err));
    absl::StatusOr<CsvTable> synthetic = sampler(training, seed);
    spdlog::set_level(level);
    return synthetic;
  };
}

std::string DescribeClaim(const PublishedClaim& claim) {
  return claim.epsilon.has_value() ? absl::StrFormat("claimed epsilon %.3f", *claim.epsilon)
                                   : "not DP";
}

absl::Status RunAuditCommand(const std::vector<std::string>& args) {
  const std::string real_path = absl::GetFlag(FLAGS_real);
  const std::string schema_path = absl::GetFlag(FLAGS_schema);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (real_path.empty() || schema_path.empty() || out.empty()) {
    return absl::InvalidArgumentError("audit needs --real, --schema and --out");
  }
  const bool canary = absl::GetFlag(FLAGS_audit_canary);
  if (canary && absl::GetFlag(FLAGS_audit_target_row) >= 0) {
    return absl::InvalidArgumentError(
        "--audit-canary and --audit-target-row both choose the target: give one");
  }
  ASSIGN_OR_RETURN(const AuditNeighbour neighbour,
                   ParseAuditNeighbour(absl::GetFlag(FLAGS_audit_neighbour)));
  const std::string mode = absl::GetFlag(FLAGS_privacy);
  ASSIGN_OR_RETURN(
      const v1::PrivacyConfig privacy,
      ShadowPrivacy(mode, absl::GetFlag(FLAGS_epsilon), absl::GetFlag(FLAGS_audit_delta)));
  ASSIGN_OR_RETURN(ShadowTrainingOptions shadow,
                   AuditShadowConfig(privacy, absl::GetFlag(FLAGS_rounds)));
  const int rounds = shadow.training.rounds();
  if (!absl::GetFlag(FLAGS_parties).empty()) {
    RETURN_IF_ERROR(LoadJsonFile(absl::GetFlag(FLAGS_parties), &shadow.parties));
  }
  shadow.work_dir = out + "/shadow_work";
  shadow.synthetic_rows = absl::GetFlag(FLAGS_audit_synthetic_rows);
  RETURN_IF_ERROR(MakeDirectories(shadow.work_dir));

  ASSIGN_OR_RETURN(const v1::Schema schema, LoadSchema(schema_path));
  ASSIGN_OR_RETURN(const CsvTable real, ReadCsv(real_path));
  const uint64_t seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_audit_seed));
  CsvTable data;
  data.header = real.header;
  for (int64_t i :
       SampleRows(static_cast<int64_t>(real.rows.size()), absl::GetFlag(FLAGS_audit_rows), seed)) {
    data.rows.push_back(real.rows[i]);
  }
  // D without the target must fill a batch.
  const int64_t rows_without_target =
      static_cast<int64_t>(data.rows.size()) -
      (canary || neighbour == AuditNeighbour::kReplace ? 0 : 1);
  if (rows_without_target < shadow.training.batch_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the audit's data D (--audit-rows, at most --real's ", real.rows.size(),
                     " rows) leaves ", rows_without_target,
                     " records without the target, fewer than the shadow models' batch size ",
                     shadow.training.batch_size()));
  }

  AuditOptions options;
  options.shadow_models = absl::GetFlag(FLAGS_audit_models);
  options.neighbour = neighbour;
  options.target_row = absl::GetFlag(FLAGS_audit_target_row);
  options.delta = absl::GetFlag(FLAGS_audit_delta);
  options.threads = absl::GetFlag(FLAGS_eval_threads);
  options.seed = seed;
  if (canary) {
    ASSIGN_OR_RETURN(options.canary, CanaryRecord(data, schema));
    spdlog::info("audit: canary target {}", absl::StrJoin(options.canary, ","));
  }
  spdlog::info(
      "audit: {} rows{}, {} shadow models per side ({} the target), {} rounds each, privacy {}",
      data.rows.size(), canary ? " + canary" : "", options.shadow_models,
      neighbour == AuditNeighbour::kReplace ? "with and with a typical record instead of"
                                            : "with and without",
      rounds, mode);
  const double attainable = AttainableEpsilonBound(options);
  spdlog::info(
      "audit: {} held-out sets per side: no attack can show an epsilon lower bound above {:.3f} "
      "(confidence {}){}",
      HeldOutPerSide(options), attainable, 1 - options.alpha,
      attainable > 0 ? "" : "; raise --audit-models");
  PublishedClaim claim;
  claim.mode = mode;
  spdlog::info(
      "audit: each shadow model is a curator and its parties in this process over loopback "
      "(plaintext); "
      "the first one's log follows, the others (same settings) log errors only");
  const SyntheticSampler sampler = QuietAfterFirstRun(MakeShadowSampler(
      schema, shadow, [&claim](const ShadowRun& run) { RecordClaim(run, &claim); }));
  ASSIGN_OR_RETURN(const AuditResult result, RunMembershipAudit(data, schema, sampler, options));
  RETURN_IF_ERROR(WriteFileAtomically(out + "/audit.json", AuditJson(result, claim)));
  spdlog::info(
      "audit: privacy {}, {}; empirical epsilon lower bound {:.3f} of at most {:.3f} attainable "
      "(delta {}); target {} (row {}); "
      "attack accuracy {:.3f}, AUC {:.3f} on {}+{} held-out sets; {:.1f} s ({:.2f} s per shadow "
      "model); "
      "wrote {}/audit.json",
      mode, DescribeClaim(claim), result.epsilon.lower_bound, result.attainable_epsilon, options.delta,
      result.canary ? "canary" : "real record", result.target_row, result.accuracy, result.auc,
      result.test_in, result.test_out, result.seconds, result.seconds_per_model, out);
  return absl::OkStatus();
}

const CommandRegistration kRegistration(
    "audit",
    {"audit        --real R.csv --schema S.json --out DIR [--privacy MODE --epsilon E] "
     "[--audit-canary] [--parties P.json] [--audit-models M] [--audit-rows N] [--rounds R]",
     &RunAuditCommand,
     {"schema", "out", "parties", "rounds", "real", "eval_threads", "epsilon"}});

}  // namespace
}  // namespace vfsynth
