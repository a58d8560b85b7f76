#ifndef VFSYNTH_COMMON_PRIVACY_LOG_MATH_H_
#define VFSYNTH_COMMON_PRIVACY_LOG_MATH_H_

#include <vector>

namespace vfsynth::privacy {

// Log-space arithmetic for the accountants: every quantity there is a sum of
// terms that overflow a double long before their logarithm does.

// log(e^a + e^b); either argument may be -inf.
double LogAdd(double a, double b);

// log(e^a - e^b) for a >= b; returns -inf when a == b. Callers must not pass
// b > a (the accountant never subtracts more than it added).
double LogSub(double a, double b);

// log(sum_i e^{x_i}); -inf for an empty input.
double LogSumExp(const std::vector<double>& terms);

// log|Gamma(x)|. std::lgamma writes the global signgam, a data race when the
// curator's and the parties' accountants run in one process; this does not.
double LogGamma(double x);

// log C(n, k) for integers 0 <= k <= n.
double LogBinomial(int n, int k);

// log(e^x - 1) for x > 0, accurate for tiny x and without overflow for huge x.
double LogExpm1(double x);

// log(erfc(x)), finite for every finite x (erfc underflows near x = 27, so the
// far tail uses the asymptotic expansion).
double LogErfc(double x);

}  // namespace vfsynth::privacy

#endif  // VFSYNTH_COMMON_PRIVACY_LOG_MATH_H_
