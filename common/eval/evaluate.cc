#include "common/eval/evaluate.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>

#include "absl/strings/str_format.h"
#include "common/base/status_macros.h"
#include "common/data/encoder.h"
#include "common/eval/frechet.h"
#include "common/eval/json_writer.h"

namespace vfsynth {
namespace {

CsvTable SubsetCsv(const CsvTable& table, const std::vector<int64_t>& indices) {
  CsvTable out;
  out.header = table.header;
  for (int64_t i : indices) {
    out.rows.push_back(table.rows[i]);
    if (static_cast<size_t>(i) < table.line_numbers.size())
      out.line_numbers.push_back(table.line_numbers[i]);
  }
  return out;
}

absl::StatusOr<double> EncodedFrechetDistance(const CsvTable& real, const CsvTable& synthetic,
                                              const v1::Schema& schema) {
  ASSIGN_OR_RETURN(const TableEncoder encoder, TableEncoder::Create(schema));
  ASSIGN_OR_RETURN(const EncodeResult r, encoder.Encode(real, "real"));
  ASSIGN_OR_RETURN(const EncodeResult s, encoder.Encode(synthetic, "synthetic"));
  return FrechetDistance(r.table.values, r.table.rows, s.table.values, s.table.rows,
                         encoder.width());
}

void WriteScores(JsonWriter& json, const char* key, const ClassificationScores& s) {
  json.Key(key).BeginObject();
  json.Field("accuracy", s.accuracy).Field("binary_f1", s.binary_f1).Field("macro_f1", s.macro_f1);
  json.EndObject();
}

void WriteUtility(JsonWriter& json, const char* key, const UtilityResult& u) {
  json.Key(key).BeginObject();
  json.Field("target", u.target).Field("num_classes", u.num_classes);
  json.Field("positive_label", u.positive_label);
  json.Key("excluded_features").BeginArray();
  for (const std::string& name : u.excluded_features) json.Value(name);
  json.EndArray();
  json.Field("real_train_rows", u.real_train_rows).Field("real_test_rows", u.real_test_rows);
  json.Field("synthetic_train_rows", u.synthetic_train_rows);
  json.Field("synthetic_test_rows", u.synthetic_test_rows);
  json.Key("models").BeginArray();
  for (const ModelUtility& m : u.models) {
    json.BeginObject().Field("model", m.model);
    WriteScores(json, "trtr", m.trtr);
    WriteScores(json, "tstr", m.tstr);
    WriteScores(json, "trts", m.trts);
    WriteScores(json, "tsts", m.tsts);
    json.Field("total_difference", m.total_difference).EndObject();
  }
  json.EndArray();
  json.EndObject();
}

}  // namespace

absl::StatusOr<EvalResult> EvaluateTables(const CsvTable& real_csv, const CsvTable& synthetic_csv,
                                          const v1::Schema& schema, const std::string& target,
                                          const EvalOptions& options, const CsvTable* holdout_csv) {
  const auto start = std::chrono::steady_clock::now();
  const CsvTable real_rows = SubsetCsv(
      real_csv,
      SampleRows(static_cast<int64_t>(real_csv.rows.size()), options.max_rows, options.seed));
  const CsvTable synthetic_rows =
      SubsetCsv(synthetic_csv, SampleRows(static_cast<int64_t>(synthetic_csv.rows.size()),
                                          options.max_rows, options.seed + 1));
  EvalResult result;
  ASSIGN_OR_RETURN(result.real, MakeEvalTable(real_rows, schema, "real"));
  ASSIGN_OR_RETURN(result.synthetic, MakeEvalTable(synthetic_rows, schema, "synthetic"));
  if (result.real.rows < 10 || result.synthetic.rows < 10) {
    return absl::InvalidArgumentError("real and synthetic tables need at least 10 rows each");
  }

  result.quality = ComputeQuality(result.real, result.synthetic, options.bins);
  result.avd2 =
      KWayAvd(result.real, result.synthetic, 2, options.avd_sets, options.seed, options.bins);
  result.avd3 =
      KWayAvd(result.real, result.synthetic, 3, options.avd_sets, options.seed, options.bins);
  result.avd4 =
      KWayAvd(result.real, result.synthetic, 4, options.avd_sets, options.seed, options.bins);
  ASSIGN_OR_RETURN(result.frechet_distance,
                   EncodedFrechetDistance(real_rows, synthetic_rows, schema));
  const std::vector<Binning> binnings = RealBinnings(result.real, options.bins);
  result.real_association = AssociationMatrix(result.real, binnings);
  result.synthetic_association = AssociationMatrix(result.synthetic, binnings);
  spdlog::info("fidelity done: quality {:.4f}, 2-AVD {:.4f}, FD {:.4f}", result.quality.overall,
               result.avd2, result.frechet_distance);

  std::optional<EvalTable> holdout;
  if (holdout_csv != nullptr) {
    ASSIGN_OR_RETURN(holdout, MakeEvalTable(*holdout_csv, schema, "holdout"));
  }
  if (options.utility && !target.empty()) {
    UtilityOptions utility_options = options.utility_options;
    utility_options.seed = options.seed;
    const EvalTable* real_test = holdout.has_value() ? &*holdout : nullptr;
    ASSIGN_OR_RETURN(result.utility, ComputeUtility(result.real, result.synthetic, schema, target,
                                                    utility_options, real_test));
    if (!options.target_party_columns.empty()) {
      utility_options.models.resize(1);
      utility_options.excluded_features = options.target_party_columns;
      ASSIGN_OR_RETURN(result.cross_party_utility,
                       ComputeUtility(result.real, result.synthetic, schema, target,
                                      utility_options, real_test));
    }
  }

  DcrOptions dcr_options = options.dcr_options;
  dcr_options.seed = options.seed;
  if (holdout.has_value()) {
    result.holdout_source = "holdout file";
    result.dcr = ComputeDcr(result.synthetic, result.real, *holdout, dcr_options);
  } else {
    const RowSplit split = SplitRows(result.real.rows, 0.8, options.seed);
    result.holdout_source = "real 20% split";
    result.dcr = ComputeDcr(result.synthetic, result.real.Subset(split.first),
                            result.real.Subset(split.second), dcr_options);
  }
  result.summary_score = result.quality.overall;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string SummaryLine(const EvalResult& r) {
  std::string line = absl::StrFormat(
      "quality %.3f (column shapes %.3f, pair trends %.3f), 2-AVD %.3f, 3-AVD %.3f, FD %.3f",
      r.summary_score, r.quality.column_shapes_score, r.quality.pair_trends_score, r.avd2, r.avd3,
      r.frechet_distance);
  if (r.utility.has_value() && !r.utility->models.empty()) {
    const ModelUtility& m = r.utility->models.front();
    line += absl::StrFormat(", %s TRTR/TSTR acc %.3f/%.3f, F1 %.3f/%.3f, total difference %.3f",
                            m.model, m.trtr.accuracy, m.tstr.accuracy,
                            TargetF1(r.utility->num_classes, m.trtr),
                            TargetF1(r.utility->num_classes, m.tstr), m.total_difference);
  }
  if (r.cross_party_utility.has_value() && !r.cross_party_utility->models.empty()) {
    const UtilityResult& u = *r.cross_party_utility;
    line += absl::StrFormat(", from other parties' columns TRTR/TSTR F1 %.3f/%.3f",
                            TargetF1(u.num_classes, u.models.front().trtr),
                            TargetF1(u.num_classes, u.models.front().tstr));
  }
  line += absl::StrFormat(", DCR closer-to-train %.3f", r.dcr.share_closer_to_train);
  return line;
}

std::string MetricsJson(const EvalResult& r) {
  JsonWriter json;
  json.BeginObject();
  json.Field("summary_score", r.summary_score).Field("summary", SummaryLine(r));
  json.Field("real_rows", r.real.rows).Field("synthetic_rows", r.synthetic.rows);
  json.Field("seconds", r.seconds);
  json.Key("fidelity").BeginObject();
  json.Field("quality_score", r.quality.overall);
  json.Field("column_shapes", r.quality.column_shapes_score);
  json.Field("column_pair_trends", r.quality.pair_trends_score);
  json.Field("avd_2way", r.avd2).Field("avd_3way", r.avd3).Field("avd_4way", r.avd4);
  json.Field("frechet_distance", r.frechet_distance);
  json.Key("columns").BeginArray();
  for (const ColumnShape& shape : r.quality.column_shapes) {
    json.BeginObject().Field("column", shape.column).Field("metric", shape.metric);
    json.Field("score", shape.score).EndObject();
  }
  json.EndArray();
  json.Key("pairs").BeginArray();
  for (const PairTrend& pair : r.quality.pair_trends) {
    json.BeginObject().Field("columns", pair.column_a + " / " + pair.column_b);
    json.Field("metric", pair.metric).Field("score", pair.score);
    if (pair.metric == "CorrelationSimilarity") {
      json.Field("real_correlation", pair.real_correlation);
      json.Field("synthetic_correlation", pair.synthetic_correlation);
    }
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();

  if (!r.party.empty()) {
    json.Key("scope").BeginObject().Field("party", r.party).Field("differentially_private", false);
    json.Key("columns").BeginArray();
    for (const EvalColumn& column : r.real.columns) json.Value(column.name);
    json.EndArray().EndObject();
  }
  if (r.privacy.has_value()) {
    json.Key("differential_privacy").BeginObject();
    json.Field("mode", v1::PrivacyConfig::Mode_Name(r.privacy->privacy().mode()))
        .Field("delta", r.privacy->privacy().delta());
    json.Key("guarantees").BeginArray();
    for (const v1::ObserverGuarantee& g : r.privacy->guarantees()) {
      json.BeginObject().Field("observer", g.observer());
      if (g.has_epsilon_planned()) {
        json.Field("epsilon", g.epsilon_planned());
      } else {
        json.Field("not_dp", g.not_dp());
      }
      json.EndObject();
    }
    json.EndArray().EndObject();
  }
  if (r.utility.has_value()) WriteUtility(json, "utility", *r.utility);
  if (r.cross_party_utility.has_value())
    WriteUtility(json, "cross_party_utility", *r.cross_party_utility);

  json.Key("privacy").BeginObject();
  json.Key("dcr").BeginObject();
  json.Field("holdout_source", r.holdout_source);
  json.Field("synthetic_rows_sampled", static_cast<int64_t>(r.dcr.synthetic_to_train.size()));
  json.Field("reference_rows", r.dcr.reference_rows);
  json.Field("share_closer_to_train", r.dcr.share_closer_to_train);
  json.Field("overfitting_protection", r.dcr.overfitting_protection);
  json.Field("median_to_train", r.dcr.median_to_train);
  json.Field("median_to_holdout", r.dcr.median_to_holdout);
  json.EndObject();
  json.EndObject();
  json.EndObject();
  return json.str() + "\n";
}

}  // namespace vfsynth
