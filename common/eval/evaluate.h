#ifndef VFSYNTH_COMMON_EVAL_EVALUATE_H_
#define VFSYNTH_COMMON_EVAL_EVALUATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/csv.h"
#include "common/eval/dcr.h"
#include "common/eval/eval_table.h"
#include "common/eval/fidelity.h"
#include "common/eval/utility.h"
#include "vfsynth/v1/privacy_plan.pb.h"
#include "vfsynth/v1/schema.pb.h"

namespace vfsynth {

struct EvalOptions {
  int64_t max_rows = 0;  // subsample real and synthetic to at most this many rows (0 = all)
  uint64_t seed = 0;     // row sampling, splits, AVD column sets, models
  int bins = 10;         // equal-width bins for numerics in pair/k-way metrics
  int avd_sets = 100;    // random column sets per k
  bool utility = true;   // needs a target
  UtilityOptions utility_options;
  // The columns the target's party holds. Non-empty: utility is measured again (first
  // model only) with the features of the other parties alone, which tests that the
  // table carries the target's dependence on columns across the party boundary.
  std::vector<std::string> target_party_columns;
  DcrOptions dcr_options;
};

struct EvalResult {
  EvalTable real;  // the (subsampled) tables the metrics were computed on
  EvalTable synthetic;
  QualityScores quality;
  double avd2 = 0;
  double avd3 = 0;
  double avd4 = 0;  // DP-FED-WAE's measure (m = 4)
  double frechet_distance = 0;
  std::optional<UtilityResult> utility;
  std::optional<UtilityResult> cross_party_utility;  // see EvalOptions::target_party_columns
  DcrResult dcr;
  std::string holdout_source;            // "holdout file" or "real 20% split"
  std::vector<double> real_association;  // AssociationMatrix of real / synthetic
  std::vector<double> synthetic_association;
  double summary_score = 0;  // = quality.overall (SDMetrics quality score)
  double seconds = 0;
  // The run's privacy statement (the curator's <table>.privacy.json), if given: the
  // guarantee against each observer, shown in the report and metrics.json.
  std::optional<v1::PrivacyPlan> privacy;
  // Set when one party scored the table on its own rows and columns (`vfsynth eval
  // --party-config`): its name. Such figures are a function of private data, not DP.
  std::string party;
};

// Computes every metric of docs/evaluation.md from two tables typed by `schema`.
// `target` (categorical) is needed for utility; `holdout`, if given, is real data
// the generator never saw, used for the DCR comparison (else the real 20% split).
absl::StatusOr<EvalResult> EvaluateTables(const CsvTable& real, const CsvTable& synthetic,
                                          const v1::Schema& schema, const std::string& target,
                                          const EvalOptions& options,
                                          const CsvTable* holdout = nullptr);

// One line for logs and demo output.
std::string SummaryLine(const EvalResult& result);

// metrics.json contents.
std::string MetricsJson(const EvalResult& result);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_EVALUATE_H_
