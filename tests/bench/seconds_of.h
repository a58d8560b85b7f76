#ifndef VFSYNTH_TESTS_BENCH_SECONDS_OF_H_
#define VFSYNTH_TESTS_BENCH_SECONDS_OF_H_

#include <chrono>
#include <utility>

namespace vfsynth::bench {

// Wall-clock seconds `op()` takes on this thread.
template <typename F>
double SecondsOf(F&& op) {
  const auto start = std::chrono::steady_clock::now();
  std::forward<F>(op)();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace vfsynth::bench

#endif  // VFSYNTH_TESTS_BENCH_SECONDS_OF_H_
