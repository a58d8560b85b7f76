#include "common/eval/report.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/eval/svg_plots.h"
#include "common/privacy/privacy_plan.h"

namespace vfsynth {
namespace {

// What the ε above covers and what it does not, and what each party's ledger records.
std::string PrivacyScope(const v1::PrivacyPlan& plan) {
  std::string html;
  if (plan.privacy().mode() == v1::PrivacyConfig::signds) {
    absl::StrAppendFormat(
        &html,
        "<p id=\"ledger\">Each party's participation ledger: a user answers at most %d "
        "round(s) of the %d, each answer &epsilon; = %.4g local DP, %.4g per user in all.</p>",
        plan.horizontal().participation_cap(), plan.rounds(), EpsilonPerAnswer(plan),
        plan.privacy().epsilon());
    html +=
        "<p id=\"scope\"><b>Protected</b>, up to &epsilon; against everyone, the curator included: "
        "everything about any one user's rows (replacing them changes the odds of anything anyone "
        "sees, "
        "this table included, by at most e<sup>&epsilon;</sup>). <b>Not protected</b>: patterns of "
        "the "
        "population, which the table is meant to show; the schema (public metadata); how many rows "
        "and "
        "users each party holds, and which party a report came from.</p>\n";
    return html;
  }
  if (plan.privacy().mode() == v1::PrivacyConfig::dpfedavg) {
    absl::StrAppendFormat(
        &html,
        "<p id=\"ledger\">Each party's privacy ledger: %d rounds, each releasing the party's sum "
        "of its sampled users' updates (each user drawn with probability %.4g, clipped to %g) "
        "with Gaussian noise at multiplier %.4g: &epsilon; = %.4g at &delta; = %g per user.</p>",
        plan.rounds(), DpFedAvgMechanism(plan).sample_rate, plan.privacy().clip_norm(),
        plan.noise_multiplier(), Guarantee(plan, Observer::kPublished).epsilon_planned(),
        plan.privacy().delta());
    html +=
        "<p id=\"scope\"><b>Protected</b>, up to (&epsilon;, &delta;) against everyone, the "
        "curator included: "
        "everything about any one user's rows. <b>Not protected</b>: patterns of the population, "
        "which the "
        "table is meant to show; the schema (public metadata); how many rows and users each party "
        "holds. "
        "The user's own party holds its rows and is not an observer this protects against.</p>\n";
    return html;
  }
  const absl::StatusOr<std::optional<double>> own = OwnReleasesEpsilonAfter(plan, plan.rounds());
  if (own.ok() && own->has_value()) {
    absl::StrAppendFormat(
        &html,
        "<p id=\"ledger\">Each party's ledger: its own releases over the run's %d rounds "
        "(critic releases%s%s) come to &epsilon; = %.4g at &delta; = %g.</p>",
        plan.rounds(), plan.marginal_noise_multiplier() > 0 ? ", the marginal release" : "",
        plan.label_epsilon() > 0 ? ", the label release" : "", **own, plan.privacy().delta());
  }
  html +=
      "<p id=\"scope\"><b>Protected</b>, up to each &epsilon; above against that observer: the "
      "values of "
      "any one person's record at every party (replacing them changes the odds of anything the "
      "observer "
      "sees, this table and the published generator included, by at most e<sup>&epsilon;</sup>, up "
      "to "
      "&delta;). <b>Not protected</b>: patterns of the population, which the table is meant to "
      "show; the "
      "schemas and the party layout (public metadata); which ids the parties share and how many, "
      "which "
      "the alignment fixes before training (the curator learns only the count); and anything "
      "against an "
      "observer marked not DP.</p>\n";
  return html;
}

constexpr int kHistogramBins = 20;
constexpr int kMaxCategoriesShown = 24;

struct Marginal {
  std::vector<std::string> labels;
  std::vector<double> real, synthetic;
};

std::vector<double> Normalise(std::vector<double> counts) {
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  if (total > 0) {
    for (double& c : counts) c /= total;
  }
  return counts;
}

// Categorical: frequencies per category (missing included), most frequent real
// categories first. Numeric: equal-width histogram over the real range; synthetic
// values outside it land in the edge bins.
Marginal ColumnMarginal(const EvalColumn& real, const EvalColumn& syn, const v1::Column& spec) {
  Marginal m;
  if (!real.numeric()) {
    const int k = real.num_categories;
    std::vector<double> rc(k + 1, 0), sc(k + 1, 0);
    for (int c : real.codes) rc[c == kMissingCode ? k : c] += 1;
    for (int c : syn.codes) sc[c == kMissingCode ? k : c] += 1;
    rc = Normalise(rc), sc = Normalise(sc);
    std::vector<int> order(k + 1);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return rc[a] > rc[b]; });
    for (int c : order) {
      if (static_cast<int>(m.labels.size()) >= kMaxCategoriesShown) break;
      if (rc[c] == 0 && sc[c] == 0) continue;
      m.labels.push_back(c == k ? "(missing)" : spec.categories(c));
      m.real.push_back(rc[c]);
      m.synthetic.push_back(sc[c]);
    }
    return m;
  }
  double lo = INFINITY, hi = -INFINITY;
  for (double v : real.values) {
    if (!std::isnan(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (!(hi > lo)) hi = lo + 1;
  const double width = (hi - lo) / kHistogramBins;
  const auto fill = [&](const std::vector<double>& values) {
    std::vector<double> counts(kHistogramBins, 0);
    for (double v : values) {
      if (std::isnan(v)) continue;
      counts[std::clamp(static_cast<int>((v - lo) / width), 0, kHistogramBins - 1)] += 1;
    }
    return Normalise(counts);
  };
  m.real = fill(real.values);
  m.synthetic = fill(syn.values);
  for (int b = 0; b < kHistogramBins; ++b)
    m.labels.push_back(absl::StrFormat("%.4g", lo + b * width));
  return m;
}

std::string DcrHistogram(const DcrResult& dcr) {
  double hi = 0;
  for (double v : dcr.synthetic_to_train) hi = std::max(hi, v);
  for (double v : dcr.synthetic_to_holdout) hi = std::max(hi, v);
  if (hi <= 0) hi = 1;
  const double width = hi / kHistogramBins;
  const auto fill = [&](const std::vector<double>& values) {
    std::vector<double> counts(kHistogramBins, 0);
    for (double v : values) counts[std::min(static_cast<int>(v / width), kHistogramBins - 1)] += 1;
    return Normalise(counts);
  };
  std::vector<std::string> labels;
  for (int b = 0; b < kHistogramBins; ++b) labels.push_back(absl::StrFormat("%.3f", b * width));
  return SvgGroupedBars("Distance to closest record (share of sampled synthetic rows)", labels,
                        fill(dcr.synthetic_to_train), fill(dcr.synthetic_to_holdout), "to train",
                        "to holdout");
}

std::string Fmt(double v) { return std::isfinite(v) ? absl::StrFormat("%.4f", v) : "n/a"; }

std::string UtilityTable(const UtilityResult& u) {
  std::string html = absl::StrCat(
      "<p>Target <b>", HtmlEscape(u.target), "</b>",
      u.positive_label.empty()
          ? ""
          : absl::StrCat(", positive class <b>", HtmlEscape(u.positive_label), "</b>"),
      absl::StrFormat("; real %d train / %d test rows, synthetic %d / %d.</p>", u.real_train_rows,
                      u.real_test_rows, u.synthetic_train_rows, u.synthetic_test_rows));
  html +=
      "<table><tr><th>model</th><th>metric</th><th>TRTR</th><th>TSTR</th><th>TRTS</th>"
      "<th>TSTS</th><th>total difference</th></tr>";
  for (const ModelUtility& m : u.models) {
    const struct {
      const char* name;
      double ClassificationScores::*field;
    } rows[] = {{"accuracy", &ClassificationScores::accuracy},
                {"binary F1", &ClassificationScores::binary_f1},
                {"macro F1", &ClassificationScores::macro_f1}};
    bool first = true;
    for (const auto& row : rows) {
      html += "<tr>";
      if (first) html += absl::StrCat("<td rowspan=\"3\">", HtmlEscape(m.model), "</td>");
      absl::StrAppend(&html, "<td>", row.name, "</td><td>", Fmt(m.trtr.*row.field), "</td><td>",
                      Fmt(m.tstr.*row.field), "</td><td>", Fmt(m.trts.*row.field), "</td><td>",
                      Fmt(m.tsts.*row.field), "</td>");
      if (first) html += absl::StrCat("<td rowspan=\"3\">", Fmt(m.total_difference), "</td>");
      html += "</tr>";
      first = false;
    }
  }
  return html + "</table>";
}

}  // namespace

std::string RenderReportHtml(const EvalResult& r, const v1::Schema& schema) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>vfsynth evaluation report</title><style>"
      "body{font-family:sans-serif;margin:20px;color:#222}"
      "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #bbb;padding:3px 8px;"
      "text-align:right}th{background:#eee}.grid{display:flex;flex-wrap:wrap;gap:10px}"
      ".summary{font-size:1.1em;background:#f4f7fb;padding:8px;border-left:4px solid #1f77b4}"
      "</style></head><body>\n<h1>vfsynth evaluation report</h1>\n";
  absl::StrAppend(&html, "<p class=\"summary\" id=\"summary\">", HtmlEscape(SummaryLine(r)),
                  "</p>\n");
  absl::StrAppendFormat(&html, "<p>%d real rows, %d synthetic rows; computed in %.1f s.</p>\n",
                        r.real.rows, r.synthetic.rows, r.seconds);

  if (!r.party.empty()) {
    absl::StrAppend(
        &html, "<h2>Scope</h2><p id=\"scope\">Computed by party <b>", HtmlEscape(r.party),
        "</b> from its own rows, on its own ", r.real.columns.size(),
        " columns only. These figures are a function of the party's private data and are not "
        "differentially private: publishing them releases information about its rows that the "
        "run's &epsilon; does not cover. Keep them inside the party unless that is "
        "acceptable.</p>\n");
  }
  if (r.privacy.has_value()) {
    absl::StrAppendFormat(
        &html,
        "<h2>Differential privacy</h2><p>Mode %s, &delta; = %g: the guarantee to a person whose "
        "record every party holds.</p><table><tr><th>against</th><th>&epsilon;</th></tr>",
        HtmlEscape(v1::PrivacyConfig::Mode_Name(r.privacy->privacy().mode())),
        r.privacy->privacy().delta());
    for (const v1::ObserverGuarantee& g : r.privacy->guarantees()) {
      absl::StrAppend(&html, "<tr><td>", HtmlEscape(g.observer()), "</td><td>",
                      g.has_epsilon_planned() ? absl::StrFormat("%.4g", g.epsilon_planned())
                                              : absl::StrCat("not DP: ", HtmlEscape(g.not_dp())),
                      "</td></tr>");
    }
    html += "</table>\n";
    html += PrivacyScope(*r.privacy);
  }
  html += "<h2>Fidelity</h2><table><tr><th>metric</th><th>value</th></tr>";
  const std::pair<const char*, double> scores[] = {
      {"Quality score (mean of the two properties)", r.quality.overall},
      {"Column shapes (KS / TV complement)", r.quality.column_shapes_score},
      {"Column pair trends (correlation / contingency similarity)", r.quality.pair_trends_score},
      {"2-way marginal AVD (lower is better)", r.avd2},
      {"3-way marginal AVD (lower is better)", r.avd3},
      {"4-way marginal AVD (lower is better)", r.avd4},
      {"Fréchet distance on encoded data (lower is better)", r.frechet_distance}};
  for (const auto& [name, value] : scores) {
    absl::StrAppend(&html, "<tr><td style=\"text-align:left\">", name, "</td><td>", Fmt(value),
                    "</td></tr>");
  }
  html += "</table>\n<h3>Marginals: real vs synthetic</h3><div class=\"grid\">\n";
  for (size_t c = 0; c < r.real.columns.size(); ++c) {
    const Marginal m = ColumnMarginal(r.real.columns[c], r.synthetic.columns[c], schema.columns(c));
    const ColumnShape& shape = r.quality.column_shapes[c];
    html += SvgGroupedBars(absl::StrCat(shape.column, " — ", shape.metric, " ", Fmt(shape.score)),
                           m.labels, m.real, m.synthetic, "real", "synthetic");
    html += "\n";
  }
  html +=
      "</div>\n<h3>Column associations (Pearson for numeric pairs, Cramér's V otherwise)</h3>"
      "<div class=\"grid\">\n";
  std::vector<std::string> names;
  for (const EvalColumn& column : r.real.columns) names.push_back(column.name);
  std::vector<double> difference(r.real_association.size());
  for (size_t i = 0; i < difference.size(); ++i) {
    difference[i] = std::abs(r.real_association[i] - r.synthetic_association[i]);
  }
  html += SvgHeatmap("Real", names, r.real_association, -1, 1) + "\n";
  html += SvgHeatmap("Synthetic", names, r.synthetic_association, -1, 1) + "\n";
  html += SvgHeatmap("|Real − synthetic|", names, difference, 0, 1) + "\n</div>\n";

  html += "<h2>Utility</h2>\n";
  html += r.utility.has_value() ? UtilityTable(*r.utility)
                                : std::string("<p>No target column given; utility skipped.</p>");
  if (r.cross_party_utility.has_value()) {
    html += absl::StrCat(
        "\n<h3>From the other parties' columns only</h3>\n<p>Without the columns of the "
        "target's party (",
        HtmlEscape(absl::StrJoin(r.cross_party_utility->excluded_features, ", ")),
        "): does the table carry the target's dependence across the party boundary?</p>");
    html += UtilityTable(*r.cross_party_utility);
  }
  html += "\n<h2>Privacy: distance to closest record</h2>\n";
  absl::StrAppendFormat(
      &html,
      "<p>Holdout: %s. %d sampled synthetic rows against %d train and %d holdout rows. "
      "Share closer to train %s (0.5 expected without memorisation); overfitting "
      "protection %s; median DCR to train %s, to holdout %s.</p>\n",
      HtmlEscape(r.holdout_source), static_cast<int64_t>(r.dcr.synthetic_to_train.size()),
      r.dcr.reference_rows, r.dcr.reference_rows, Fmt(r.dcr.share_closer_to_train),
      Fmt(r.dcr.overfitting_protection), Fmt(r.dcr.median_to_train), Fmt(r.dcr.median_to_holdout));
  html += DcrHistogram(r.dcr);
  html += "\n</body></html>\n";
  return html;
}

}  // namespace vfsynth
