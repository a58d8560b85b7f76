#ifndef VFSYNTH_COMMON_EVAL_FIDELITY_H_
#define VFSYNTH_COMMON_EVAL_FIDELITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/eval/eval_table.h"

namespace vfsynth {

// SDMetrics-equivalent statistical metrics (anchors §4). All scores are in [0, 1],
// higher is better; NaN means "undefined" (e.g. an empty column after dropping
// missing values, or a constant column for correlations).

// 1 - two-sample KS statistic (max |ECDF_real - ECDF_syn|); NaNs dropped.
double KsComplement(const std::vector<double>& real, const std::vector<double>& synthetic);

// 1 - TVD of the category frequencies; kMissingCode entries dropped.
double TvComplement(const std::vector<int>& real, const std::vector<int>& synthetic);

// 1 - |rho_real - rho_syn| / 2 with Pearson rho over rows where both are present.
double CorrelationSimilarity(const std::vector<double>& real_a, const std::vector<double>& real_b,
                             const std::vector<double>& syn_a, const std::vector<double>& syn_b);

// Pearson correlation over rows where both are present (NaN if undefined).
double PearsonCorrelation(const std::vector<double>& a, const std::vector<double>& b);

// 1 - TVD of the joint distribution of two discrete columns; every code (including
// kMissingCode and out-of-range bins) is a category.
double ContingencySimilarity(const std::vector<int>& real_a, const std::vector<int>& real_b,
                             const std::vector<int>& syn_a, const std::vector<int>& syn_b);

// Cramér's V of two discrete columns (every code a category); NaN if undefined.
double CramersV(const std::vector<int>& a, const std::vector<int>& b);

// Equal-width bins over [lo, hi] used to discretise numerics for pair and k-way
// metrics: codes 0..bins-1 inside the range (hi in the last bin), kMissingCode for
// NaN, kBelowRange / `bins` for synthetic values outside the real range, so they
// never match a real cell.
inline constexpr int kBelowRange = -2;
struct Binning {
  double lo = 0;
  double hi = 0;
  int bins = 10;
};
Binning RealRangeBinning(const std::vector<double>& real, int bins);
std::vector<int> Discretise(const std::vector<double>& values, const Binning& binning);

// Discrete codes of every column of `table`: categoricals as is, numerics binned by
// `binnings[c]` (which must be set for numerics; computed from the real table).
std::vector<std::vector<int>> DiscreteCodes(const EvalTable& table,
                                            const std::vector<Binning>& binnings);
std::vector<Binning> RealBinnings(const EvalTable& real, int bins);

struct ColumnShape {
  std::string column;
  std::string metric;  // "KSComplement" or "TVComplement"
  double score = 0;
};

struct PairTrend {
  std::string column_a;
  std::string column_b;
  std::string metric;  // "CorrelationSimilarity" or "ContingencySimilarity"
  double score = 0;
  double real_correlation = 0;  // Pearson (numeric pairs) else NaN
  double synthetic_correlation = 0;
};

// SDMetrics quality-report properties. The property score is the NaN-skipping mean.
struct QualityScores {
  std::vector<ColumnShape> column_shapes;
  std::vector<PairTrend> pair_trends;
  double column_shapes_score = 0;
  double pair_trends_score = 0;
  double overall = 0;  // mean of the two properties
};
QualityScores ComputeQuality(const EvalTable& real, const EvalTable& synthetic, int bins = 10);

// Column-by-column association matrix for heatmaps: Pearson for numeric pairs,
// Cramér's V (discretised as above) otherwise; 1 on the diagonal; row-major.
std::vector<double> AssociationMatrix(const EvalTable& table, const std::vector<Binning>& binnings);

// k-way marginal AVD (VDGAN eq. 5.1), k <= 4: mean over `sets` random k-column sets of the
// TVD between the real and synthetic k-way marginals (numerics binned). Lower is
// better; the column sets depend only on (column count, k, sets, seed).
double KWayAvd(const EvalTable& real, const EvalTable& synthetic, int k, int sets, uint64_t seed,
               int bins = 10);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_FIDELITY_H_
