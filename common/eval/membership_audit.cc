#include "common/eval/membership_audit.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/eval/classification_metrics.h"
#include "common/eval/dcr.h"
#include "common/eval/fidelity.h"
#include "common/eval/json_writer.h"
#include "common/eval/random_forest.h"

namespace vfsynth {
namespace {

double Mean(const std::vector<double>& v) {
  double sum = 0;
  int n = 0;
  for (double x : v) {
    if (!std::isnan(x)) sum += x, ++n;
  }
  return n == 0 ? 0 : sum / n;
}

double Variance(const std::vector<double>& v, double mean) {
  double sum = 0;
  int n = 0;
  for (double x : v) {
    if (!std::isnan(x)) sum += (x - mean) * (x - mean), ++n;
  }
  return n < 2 ? 0 : sum / (n - 1);
}

double Finite(double v) { return std::isfinite(v) ? v : 0.0; }

}  // namespace

std::vector<double> AuditFeatures(const EvalTable& synthetic, const EvalTable& target,
                                  const std::vector<double>& ranges) {
  std::vector<double> f;
  for (size_t c = 0; c < synthetic.columns.size(); ++c) {
    const EvalColumn& column = synthetic.columns[c];
    if (column.numeric()) {
      const double scale = ranges[c] > 0 ? ranges[c] : 1.0;
      std::vector<double> present;
      for (double v : column.values) {
        if (!std::isnan(v)) present.push_back(v / scale);
      }
      const double mean = Mean(present);
      f.push_back(mean);
      f.push_back(Finite(Median(present)));
      f.push_back(Variance(present, mean));
    } else {
      std::vector<double> freq(column.num_categories + 1, 0.0);
      for (int code : column.codes) freq[code == kMissingCode ? column.num_categories : code] += 1;
      for (double count : freq) f.push_back(synthetic.rows > 0 ? count / synthetic.rows : 0);
    }
  }
  for (size_t a = 0; a < synthetic.columns.size(); ++a) {
    for (size_t b = a + 1; b < synthetic.columns.size(); ++b) {
      if (synthetic.columns[a].numeric() && synthetic.columns[b].numeric()) {
        f.push_back(
            Finite(PearsonCorrelation(synthetic.columns[a].values, synthetic.columns[b].values)));
      }
    }
  }
  // Distances from every synthetic row to the target, via the DCR machinery.
  const std::vector<double> to_target = DistanceToClosestRecord(synthetic, target, ranges, 1);
  double closest = 1, within_05 = 0, within_10 = 0;
  for (double d : to_target) {
    closest = std::min(closest, d);
    within_05 += d <= 0.05;
    within_10 += d <= 0.10;
  }
  const double n = std::max<double>(1, static_cast<double>(to_target.size()));
  f.push_back(closest);
  f.push_back(within_05 / n);
  f.push_back(within_10 / n);
  return f;
}

int HeldOutPerSide(const AuditOptions& options) {
  return options.shadow_models -
         std::clamp(static_cast<int>(std::lround(options.train_fraction * options.shadow_models)),
                    1, options.shadow_models - 1);
}

double AttainableEpsilonBound(const AuditOptions& options) {
  const int held_out = HeldOutPerSide(options);
  return AttainableEpsilonBound(held_out, held_out, options.delta, options.alpha);
}

const char* AuditNeighbourName(AuditNeighbour neighbour) {
  return neighbour == AuditNeighbour::kReplace ? "replace" : "remove";
}

absl::StatusOr<AuditNeighbour> ParseAuditNeighbour(absl::string_view name) {
  if (name == "replace") return AuditNeighbour::kReplace;
  if (name == "remove") return AuditNeighbour::kRemove;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown audit neighbour '", name, "' (replace or remove)"));
}

absl::StatusOr<AuditResult> RunMembershipAudit(const CsvTable& data, const v1::Schema& schema,
                                               const SyntheticSampler& sampler,
                                               const AuditOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (options.shadow_models < 2)
    return absl::InvalidArgumentError("audit needs >= 2 shadow models per side");
  if (!options.canary.empty() && options.target_row >= 0) {
    return absl::InvalidArgumentError("audit takes either a canary or a target row, not both");
  }
  if (!options.canary.empty() && options.canary.size() != data.header.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the canary has ", options.canary.size(),
                                                   " fields, the data ", data.header.size()));
  }
  CsvTable with_canary;
  if (!options.canary.empty()) {
    with_canary = data;
    with_canary.rows.push_back(options.canary);
    with_canary.line_numbers.clear();
  }
  const CsvTable& d = options.canary.empty() ? data : with_canary;
  ASSIGN_OR_RETURN(const EvalTable table, MakeEvalTable(d, schema, "audit data"));
  if (table.rows < 3) return absl::InvalidArgumentError("audit needs at least 3 rows");
  const std::vector<double> ranges = ColumnRanges({&table});

  AuditResult result;
  result.training_rows = table.rows;
  result.shadow_models = options.shadow_models;
  result.target_row = options.target_row;
  result.canary = !options.canary.empty();
  const bool isolated_target = !result.canary && result.target_row < 0;
  std::vector<double> nn;
  if (isolated_target || options.neighbour == AuditNeighbour::kReplace) {
    nn = NearestNeighbourDistances(table, ranges, options.threads);
  }
  if (result.canary) {
    result.target_row = table.rows - 1;
  } else if (isolated_target) {
    // The most isolated record is the most exposed (Meeus et al.; VFLGAN App. A.7).
    result.target_row = std::max_element(nn.begin(), nn.end()) - nn.begin();
  }
  if (result.target_row >= table.rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("target row ", result.target_row, " out of range"));
  }
  const EvalTable target = table.Subset({result.target_row});
  for (const v1::Column& column : schema.columns()) {
    result.target_record.push_back(d.rows[result.target_row][d.ColumnIndex(column.name())]);
  }
  result.neighbour = options.neighbour;
  CsvTable without = d;
  if (options.neighbour == AuditNeighbour::kReplace) {
    // The least isolated other record: what a typical person's row looks like.
    nn[result.target_row] = std::numeric_limits<double>::infinity();
    result.replacement_row = std::min_element(nn.begin(), nn.end()) - nn.begin();
    without.rows[result.target_row] = d.rows[result.replacement_row];
    without.line_numbers.clear();
  } else {
    without.rows.erase(without.rows.begin() + result.target_row);
    if (!without.line_numbers.empty())
      without.line_numbers.erase(without.line_numbers.begin() + result.target_row);
  }

  // features[side][i]: side 1 = trained with the target.
  std::vector<std::vector<double>> features[2];
  for (int i = 0; i < options.shadow_models; ++i) {
    for (int side = 1; side >= 0; --side) {
      const uint64_t seed = options.seed * 7919 + 2 * i + side + 1;
      ASSIGN_OR_RETURN(const CsvTable synthetic, sampler(side == 1 ? d : without, seed));
      ASSIGN_OR_RETURN(const EvalTable typed, MakeEvalTable(synthetic, schema, "shadow synthetic"));
      features[side].push_back(AuditFeatures(typed, target, ranges));
    }
    spdlog::info("audit: shadow pair {}/{} done", i + 1, options.shadow_models);
  }

  // Balanced split of each side into attack-train and attack-test sets.
  const int train_per_side = options.shadow_models - HeldOutPerSide(options);
  FeatureMatrix train_x, test_x;
  std::vector<int> train_y, test_y;
  const int width = static_cast<int>(features[0][0].size());
  train_x.cols = test_x.cols = width;
  for (int side = 0; side < 2; ++side) {
    const std::vector<int64_t> order =
        SampleRows(options.shadow_models, 0, options.seed + 17 + side);
    for (int k = 0; k < options.shadow_models; ++k) {
      const bool train = k < train_per_side;
      FeatureMatrix& x = train ? train_x : test_x;
      for (double v : features[side][order[k]]) x.values.push_back(static_cast<float>(v));
      ++x.rows;
      (train ? train_y : test_y).push_back(side);
    }
  }
  RandomForestOptions forest_options;
  forest_options.trees = options.attack_trees;
  forest_options.max_depth = 3;  // VFLGAN's attack forest
  forest_options.threads = options.threads;
  forest_options.seed = options.seed;
  RandomForest attack(forest_options);
  RETURN_IF_ERROR(attack.Fit(train_x, train_y, 2));
  ASSIGN_OR_RETURN(const std::vector<double> proba, attack.PredictProba(test_x));
  std::vector<double> scores;
  int correct = 0;
  for (int64_t r = 0; r < test_x.rows; ++r) {
    const double p_in = proba[2 * r + 1];
    scores.push_back(p_in);
    const int predicted = p_in > 0.5 ? 1 : 0;
    correct += predicted == test_y[r];
    if (test_y[r] == 1) {
      ++result.test_in;
      result.false_negatives += predicted == 0;
    } else {
      ++result.test_out;
      result.false_positives += predicted == 1;
    }
  }
  result.accuracy = static_cast<double>(correct) / static_cast<double>(test_x.rows);
  result.auc = RocAuc(scores, test_y);
  result.epsilon = EmpiricalEpsilon(result.false_negatives, result.test_in, result.false_positives,
                                    result.test_out, options.delta, options.alpha);
  result.attainable_epsilon =
      vfsynth::AttainableEpsilonBound(result.test_in, result.test_out, options.delta, options.alpha);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.seconds_per_model = result.seconds / (2.0 * options.shadow_models);
  return result;
}

std::string AuditJson(const AuditResult& r, const PublishedClaim& claim) {
  JsonWriter json;
  json.BeginObject();
  json.Field("privacy_mode", claim.mode).Field("differentially_private", claim.epsilon.has_value());
  if (claim.epsilon.has_value()) {
    json.Field("claimed_epsilon", *claim.epsilon);
  } else {
    json.Field("not_dp", claim.not_dp);
  }
  json.Field("target", r.canary ? "canary" : "real record");
  json.Field("neighbour", AuditNeighbourName(r.neighbour));
  if (r.neighbour == AuditNeighbour::kReplace) json.Field("replacement_row", r.replacement_row);
  json.Field("target_row", r.target_row);
  json.Key("target_record").BeginArray();
  for (const std::string& value : r.target_record) json.Value(value);
  json.EndArray();
  json.Field("training_rows", r.training_rows).Field("shadow_models_per_side", r.shadow_models);
  json.Field("test_in", r.test_in).Field("test_out", r.test_out);
  json.Field("false_negatives", r.false_negatives).Field("false_positives", r.false_positives);
  json.Field("attack_accuracy", r.accuracy).Field("attack_auc", r.auc);
  json.Field("fnr_upper", r.epsilon.fnr_upper).Field("fpr_upper", r.epsilon.fpr_upper);
  json.Field("epsilon_lower_bound", r.epsilon.lower_bound);
  json.Field("epsilon_lower_bound_attainable", r.attainable_epsilon);
  json.Field("epsilon_point_estimate", r.epsilon.point);
  json.Field("seconds", r.seconds).Field("seconds_per_model", r.seconds_per_model);
  json.EndObject();
  return json.str() + "\n";
}

}  // namespace vfsynth
