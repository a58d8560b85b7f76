#ifndef VFSYNTH_COMMON_EVAL_CLOPPER_PEARSON_H_
#define VFSYNTH_COMMON_EVAL_CLOPPER_PEARSON_H_

#include <cstdint>

namespace vfsynth {

// Regularised incomplete beta function I_x(a, b) (continued fraction, Lentz).
double RegularizedIncompleteBeta(double a, double b, double x);

// The p-quantile of Beta(a, b): the x with I_x(a, b) = p (bisection).
double BetaQuantile(double p, double a, double b);

struct Interval {
  double lower = 0;
  double upper = 1;
};

// Two-sided exact binomial (Clopper–Pearson) interval for `successes` out of
// `trials` at level 1 - alpha (anchors §5).
Interval ClopperPearson(int64_t successes, int64_t trials, double alpha = 0.05);

struct EpsilonBound {
  double fnr_upper = 0;  // Clopper–Pearson upper bounds of the error rates
  double fpr_upper = 0;
  double lower_bound = 0;  // empirical ε lower bound at confidence 1 - alpha
  double point = 0;        // point estimate (infinite when an error rate is 0)
};

// Empirical ε of a membership test with FN false negatives among `positives` and
// FP false positives among `negatives` (Jagielski et al. 2020; anchors §5):
//   ε_lb = max(0, ln((1 - δ - FNR_ub) / FPR_ub), ln((1 - δ - FPR_ub) / FNR_ub)).
EpsilonBound EmpiricalEpsilon(int64_t false_negatives, int64_t positives, int64_t false_positives,
                              int64_t negatives, double delta, double alpha = 0.05);
// The largest lower_bound EmpiricalEpsilon can give for these counts: a perfect attack's
// (no errors). Below it a reported bound says nothing about the training's ε.
double AttainableEpsilonBound(int64_t positives, int64_t negatives, double delta,
                              double alpha = 0.05);

}  // namespace vfsynth

#endif  // VFSYNTH_COMMON_EVAL_CLOPPER_PEARSON_H_
