#ifndef VFSYNTH_TESTS_BENCH_BENCH_REPORT_H_
#define VFSYNTH_TESTS_BENCH_BENCH_REPORT_H_

#include <string>
#include <vector>

#include "vfsynth/v1/bench.pb.h"
#include "vfsynth/v1/profile.pb.h"

namespace vfsynth::bench {

double Median(std::vector<double> values);  // 0 for no values
double Percentile(std::vector<double> values, double p);

// The breakdown of the distributed steps of `kind` (critic or generator) from round
// `first_round` on (the warm-up is left out). A party's work on a curator step is
// its reply's work plus, when it came right before, its update of the previous
// critic step (that update delays this step's reply). Medians over steps; party
// phases are the mean over parties of their medians.
v1::BenchBreakdown Summarize(const v1::StepProfile& curator,
                             const std::vector<v1::StepProfile>& parties, v1::StepKind kind,
                             int n_critic, int64_t first_round);

// Median of the curator's checkpoint steps.
double CheckpointMs(const v1::StepProfile& curator);

// Raw float32 bytes one party must move per round: n_critic critic steps of
// B (d_k + 4 d_h) and a generator step of B (2 d_k + 2 d_h), times 4.
double MinimalBytesPerRound(int batch, int width, int feature_dim, int n_critic);

// The targets from the cases of a report.
v1::BenchTargets ComputeTargets(const std::vector<v1::BenchCase>& cases);

// docs/performance.md's tables.
std::string MarkdownTables(const v1::BenchReport& report);

}  // namespace vfsynth::bench

#endif  // VFSYNTH_TESTS_BENCH_BENCH_REPORT_H_
