#ifndef VFSYNTH_TESTS_BENCH_BENCH_CASES_H_
#define VFSYNTH_TESTS_BENCH_BENCH_CASES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/bench/bench_fixture.h"
#include "vfsynth/v1/config.pb.h"

namespace vfsynth::bench {

// One benchmark configuration.
struct BenchCase {
  std::string preset = "default";  // "default": the default sizes of docs/configuration.md;
                                   // "vflgan": VFLGAN's Adult nets
  int parties = 2;
  int batch = 64;
  std::string mode = "none";  // none | dpsgd | strict

  std::string name() const;  // "k3-b256-none", "vflgan-k2-b64-none"
};

// The grid: every (parties, batch, mode) with the default preset, plus the VFLGAN
// comparison (2 parties, batch 64, each of `vflgan_modes`).
std::vector<BenchCase> MakeGrid(const std::vector<int>& parties, const std::vector<int>& batches,
                                const std::vector<std::string>& modes,
                                const std::vector<std::string>& vflgan_modes);

// Settings shared by the reference trainer and the daemons of one case.
struct RunSettings {
  int rounds = 10;  // generator rounds to run (warm-up included)
  int n_critic = 5;
  int curator_threads = 1;  // torch intra-op threads
  int party_threads = 1;
  int reference_threads = 1;
  std::string dir;  // run directory: configs, checkpoints, ledgers, logs
};

v1::ModelConfig BenchModel(const std::string& preset);
v1::TrainingConfig BenchTraining(const BenchCase& c, const RunSettings& s, int threads);

// Resolved configurations of one run.
absl::StatusOr<v1::LocalRunConfig> ReferenceConfig(const BenchCase& c, const RunSettings& s,
                                                   const Fixture& f);
absl::StatusOr<v1::CuratorConfig> CuratorConfigFor(const BenchCase& c, const RunSettings& s,
                                                   const Fixture& f);
// `curator` is the host:port the party dials.
absl::StatusOr<v1::PartyConfig> PartyConfigFor(const BenchCase& c, const RunSettings& s,
                                               const Fixture& f, int party,
                                               const std::string& curator);

}  // namespace vfsynth::bench

#endif  // VFSYNTH_TESTS_BENCH_BENCH_CASES_H_
