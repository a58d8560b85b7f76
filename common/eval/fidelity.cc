#include "common/eval/fidelity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "absl/container/flat_hash_map.h"

namespace vfsynth {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> SortedPresent(const std::vector<double>& values) {
  std::vector<double> out;
  out.reserve(values.size());
  for (double v : values) {
    if (!std::isnan(v)) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

double NanMean(const std::vector<double>& values) {
  double sum = 0;
  int count = 0;
  for (double v : values) {
    if (!std::isnan(v)) {
      sum += v;
      ++count;
    }
  }
  return count == 0 ? kNaN : sum / count;
}

// Joint frequencies of code tuples; a tuple is packed into one int64 key.
using JointCounts = absl::flat_hash_map<int64_t, double>;

JointCounts CountTuples(const std::vector<const std::vector<int>*>& columns) {
  JointCounts counts;
  if (columns.empty()) return counts;
  const size_t rows = columns[0]->size();
  for (size_t r = 0; r < rows; ++r) {
    uint64_t key = 0;
    // Codes are >= kBelowRange (-2) and below 2^16 - 2: 16 bits each, k <= 4.
    for (const std::vector<int>* column : columns)
      key = (key << 16) | static_cast<uint64_t>((*column)[r] + 2);
    counts[static_cast<int64_t>(key)] += 1;
  }
  return counts;
}

// Total variation distance between two count tables (normalised by their totals).
double CountsTvd(const JointCounts& real, double real_total, const JointCounts& syn,
                 double syn_total) {
  double sum = 0;
  for (const auto& [key, count] : real) {
    const auto it = syn.find(key);
    const double other = it == syn.end() ? 0 : it->second / syn_total;
    sum += std::abs(count / real_total - other);
  }
  for (const auto& [key, count] : syn) {
    if (!real.contains(key)) sum += count / syn_total;
  }
  return 0.5 * sum;
}

}  // namespace

double KsComplement(const std::vector<double>& real, const std::vector<double>& synthetic) {
  const std::vector<double> a = SortedPresent(real);
  const std::vector<double> b = SortedPresent(synthetic);
  if (a.empty() || b.empty()) return kNaN;
  // Walk both sorted samples; compare the ECDFs after consuming all ties of a value.
  size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() || j < b.size()) {
    const double x = j == b.size() || (i < a.size() && a[i] <= b[j]) ? a[i] : b[j];
    while (i < a.size() && a[i] == x) ++i;
    while (j < b.size() && b[j] == x) ++j;
    d = std::max(d,
                 std::abs(static_cast<double>(i) / a.size() - static_cast<double>(j) / b.size()));
  }
  return 1.0 - d;
}

double TvComplement(const std::vector<int>& real, const std::vector<int>& synthetic) {
  JointCounts rc, sc;
  double rn = 0, sn = 0;
  for (int c : real) {
    if (c != kMissingCode) rc[c] += 1, rn += 1;
  }
  for (int c : synthetic) {
    if (c != kMissingCode) sc[c] += 1, sn += 1;
  }
  if (rn == 0 || sn == 0) return kNaN;
  return 1.0 - CountsTvd(rc, rn, sc, sn);
}

double PearsonCorrelation(const std::vector<double>& a, const std::vector<double>& b) {
  double n = 0, ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) continue;
    n += 1, ma += a[i], mb += b[i];
  }
  if (n < 2) return kNaN;
  ma /= n, mb /= n;
  double saa = 0, sbb = 0, sab = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) continue;
    const double da = a[i] - ma, db = b[i] - mb;
    saa += da * da, sbb += db * db, sab += da * db;
  }
  if (saa <= 0 || sbb <= 0) return kNaN;
  return std::clamp(sab / std::sqrt(saa * sbb), -1.0, 1.0);
}

double CorrelationSimilarity(const std::vector<double>& real_a, const std::vector<double>& real_b,
                             const std::vector<double>& syn_a, const std::vector<double>& syn_b) {
  return 1.0 - std::abs(PearsonCorrelation(real_a, real_b) - PearsonCorrelation(syn_a, syn_b)) / 2;
}

double ContingencySimilarity(const std::vector<int>& real_a, const std::vector<int>& real_b,
                             const std::vector<int>& syn_a, const std::vector<int>& syn_b) {
  if (real_a.empty() || syn_a.empty()) return kNaN;
  const JointCounts rc = CountTuples({&real_a, &real_b});
  const JointCounts sc = CountTuples({&syn_a, &syn_b});
  return 1.0 -
         CountsTvd(rc, static_cast<double>(real_a.size()), sc, static_cast<double>(syn_a.size()));
}

double CramersV(const std::vector<int>& a, const std::vector<int>& b) {
  const double n = static_cast<double>(a.size());
  if (n == 0) return kNaN;
  JointCounts ca, cb;
  for (size_t i = 0; i < a.size(); ++i) ca[a[i]] += 1, cb[b[i]] += 1;
  const JointCounts joint = CountTuples({&a, &b});
  double chi2 = 0;
  // Sum over all cells: observed^2/expected - n (zero cells contribute +expected-expected).
  for (const auto& [key, observed] : joint) {
    const int code_a = static_cast<int>(key >> 16) - 2;
    const int code_b = static_cast<int>(key & 0xffff) - 2;
    const double expected = ca[code_a] * cb[code_b] / n;
    chi2 += observed * observed / expected;
  }
  chi2 -= n;
  const double k = static_cast<double>(std::min(ca.size(), cb.size())) - 1;
  if (k <= 0) return kNaN;
  return std::sqrt(std::max(0.0, chi2) / (n * k));
}

Binning RealRangeBinning(const std::vector<double>& real, int bins) {
  Binning binning;
  binning.bins = bins;
  bool any = false;
  for (double v : real) {
    if (std::isnan(v)) continue;
    binning.lo = any ? std::min(binning.lo, v) : v;
    binning.hi = any ? std::max(binning.hi, v) : v;
    any = true;
  }
  return binning;
}

std::vector<int> Discretise(const std::vector<double>& values, const Binning& binning) {
  std::vector<int> codes(values.size());
  const double width = (binning.hi - binning.lo) / binning.bins;
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (std::isnan(v)) {
      codes[i] = kMissingCode;
    } else if (v < binning.lo) {
      codes[i] = kBelowRange;
    } else if (v > binning.hi) {
      codes[i] = binning.bins;
    } else if (width <= 0) {
      codes[i] = 0;
    } else {
      codes[i] = std::min(static_cast<int>((v - binning.lo) / width), binning.bins - 1);
    }
  }
  return codes;
}

std::vector<Binning> RealBinnings(const EvalTable& real, int bins) {
  std::vector<Binning> out;
  for (const EvalColumn& column : real.columns) {
    out.push_back(column.numeric() ? RealRangeBinning(column.values, bins) : Binning{});
  }
  return out;
}

std::vector<std::vector<int>> DiscreteCodes(const EvalTable& table,
                                            const std::vector<Binning>& binnings) {
  std::vector<std::vector<int>> out;
  for (size_t c = 0; c < table.columns.size(); ++c) {
    const EvalColumn& column = table.columns[c];
    out.push_back(column.numeric() ? Discretise(column.values, binnings[c]) : column.codes);
  }
  return out;
}

QualityScores ComputeQuality(const EvalTable& real, const EvalTable& synthetic, int bins) {
  QualityScores q;
  const std::vector<Binning> binnings = RealBinnings(real, bins);
  const auto real_codes = DiscreteCodes(real, binnings);
  const auto syn_codes = DiscreteCodes(synthetic, binnings);
  std::vector<double> shape_scores, trend_scores;
  const size_t n = real.columns.size();
  for (size_t c = 0; c < n; ++c) {
    const EvalColumn& rc = real.columns[c];
    const EvalColumn& sc = synthetic.columns[c];
    ColumnShape shape{rc.name, rc.numeric() ? "KSComplement" : "TVComplement", 0};
    shape.score =
        rc.numeric() ? KsComplement(rc.values, sc.values) : TvComplement(rc.codes, sc.codes);
    shape_scores.push_back(shape.score);
    q.column_shapes.push_back(shape);
  }
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      const EvalColumn& ra = real.columns[a];
      const EvalColumn& rb = real.columns[b];
      PairTrend trend{ra.name, rb.name, "", 0, kNaN, kNaN};
      if (ra.numeric() && rb.numeric()) {
        trend.metric = "CorrelationSimilarity";
        trend.real_correlation = PearsonCorrelation(ra.values, rb.values);
        trend.synthetic_correlation =
            PearsonCorrelation(synthetic.columns[a].values, synthetic.columns[b].values);
        trend.score = 1.0 - std::abs(trend.real_correlation - trend.synthetic_correlation) / 2;
      } else {
        trend.metric = "ContingencySimilarity";
        trend.score =
            ContingencySimilarity(real_codes[a], real_codes[b], syn_codes[a], syn_codes[b]);
      }
      trend_scores.push_back(trend.score);
      q.pair_trends.push_back(trend);
    }
  }
  q.column_shapes_score = NanMean(shape_scores);
  q.pair_trends_score = NanMean(trend_scores);
  q.overall = NanMean({q.column_shapes_score, q.pair_trends_score});
  return q;
}

std::vector<double> AssociationMatrix(const EvalTable& table,
                                      const std::vector<Binning>& binnings) {
  const size_t n = table.columns.size();
  const auto codes = DiscreteCodes(table, binnings);
  std::vector<double> m(n * n, 1.0);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      const EvalColumn& ca = table.columns[a];
      const EvalColumn& cb = table.columns[b];
      const double v = ca.numeric() && cb.numeric() ? PearsonCorrelation(ca.values, cb.values)
                                                    : CramersV(codes[a], codes[b]);
      m[a * n + b] = m[b * n + a] = v;
    }
  }
  return m;
}

double KWayAvd(const EvalTable& real, const EvalTable& synthetic, int k, int sets, uint64_t seed,
               int bins) {
  const int n = static_cast<int>(real.columns.size());
  if (k < 1 || k > n || k > 4 || sets <= 0 || real.rows == 0 || synthetic.rows == 0) return kNaN;
  const std::vector<Binning> binnings = RealBinnings(real, bins);
  const auto real_codes = DiscreteCodes(real, binnings);
  const auto syn_codes = DiscreteCodes(synthetic, binnings);
  std::mt19937_64 rng(seed);
  double total = 0;
  std::vector<int> order(n);
  for (int s = 0; s < sets; ++s) {
    // Partial Fisher–Yates: the first k entries are a uniform random k-set.
    std::iota(order.begin(), order.end(), 0);
    for (int i = 0; i < k; ++i) {
      const int j = i + static_cast<int>(rng() % static_cast<uint64_t>(n - i));
      std::swap(order[i], order[j]);
    }
    std::vector<const std::vector<int>*> rs, ss;
    for (int i = 0; i < k; ++i)
      rs.push_back(&real_codes[order[i]]), ss.push_back(&syn_codes[order[i]]);
    total += CountsTvd(CountTuples(rs), static_cast<double>(real.rows), CountTuples(ss),
                       static_cast<double>(synthetic.rows));
  }
  return total / sets;
}

}  // namespace vfsynth
