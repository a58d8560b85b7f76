#ifndef VFSYNTH_TESTS_BENCH_MEASUREMENT_BENCH_H_
#define VFSYNTH_TESTS_BENCH_MEASUREMENT_BENCH_H_

// The measured-marginals mode's costs: its run's phases through the daemons, from the
// curator's status, and the secure counts' throughput on one core.

#include <cstdint>

#include "absl/status/statusor.h"
#include "tests/bench/distributed_bench.h"
#include "vfsynth/v1/bench.pb.h"

namespace vfsynth::bench {

// Alignment, measurement and fit of one measured-marginals run that fitted `fit_steps`
// steps, from its status samples and plan (DistributedOptions.watch_status). The
// measurement ends with the first fit step, less that step's time.
absl::StatusOr<v1::BenchMeasurement> SummarizeMeasurementRun(const DistributedResult& run,
                                                             int64_t fit_steps);

// 2048-bit packed Paillier on this thread: `records` records of 60 slots encrypted by the
// key holder, summed by a 10-value column with noise, and the sums decrypted, each as
// ciphertexts per second (set in `result`).
absl::Status MeasureSecureThroughput(int records, v1::BenchMeasurement* result);

}  // namespace vfsynth::bench

#endif  // VFSYNTH_TESTS_BENCH_MEASUREMENT_BENCH_H_
