#include "tests/bench/measurement_bench.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/random/secure_random.h"
#include "common/secure/cross_counts.h"
#include "tests/bench/seconds_of.h"

namespace vfsynth::bench {
namespace {

// Seconds of the first sample with `phase`.
std::optional<double> FirstSeen(const std::vector<StatusSample>& samples, v1::RunPhase phase) {
  for (const StatusSample& s : samples) {
    if (s.phase == phase) return s.seconds;
  }
  return std::nullopt;
}

// Seconds of the first sample at `round` or later, in any phase (the last round's
// sample can come with publication).
std::optional<double> FirstAtRound(const std::vector<StatusSample>& samples, int64_t round) {
  for (const StatusSample& s : samples) {
    if (s.round >= round) return s.seconds;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<v1::BenchMeasurement> SummarizeMeasurementRun(const DistributedResult& run,
                                                             int64_t fit_steps) {
  const auto& samples = run.status_samples;
  const std::optional<double> aligning = FirstSeen(samples, v1::aligning);
  const std::optional<double> planning = FirstSeen(samples, v1::planning);
  const std::optional<double> training = FirstSeen(samples, v1::training);
  const std::optional<double> first_step = FirstAtRound(samples, 1);
  const std::optional<double> last_step = FirstAtRound(samples, fit_steps);
  const std::optional<double> finished = FirstSeen(samples, v1::finished);
  if (!aligning || !planning || !training || !first_step || !last_step || !finished ||
      fit_steps < 2 || !run.plan.has_value()) {
    std::string seen;
    for (const StatusSample& s : samples) {
      absl::StrAppend(&seen, " ", v1::RunPhase_Name(s.phase), "@", s.round);
    }
    return absl::InternalError(absl::StrCat("the run's status did not pass through alignment, ",
                                            "planning, ", fit_steps,
                                            " fit steps and publication; seen:", seen));
  }
  v1::BenchMeasurement m;
  m.set_records(run.plan->records());
  m.set_columns(run.plan->columns_size());
  m.set_histograms(run.plan->measurements_size());
  int cross = 0;
  for (const v1::MeasuredHistogram& h : run.plan->measurements()) cross += h.cross_party();
  m.set_cross_histograms(cross);
  const double step_s = (*last_step - *first_step) / static_cast<double>(fit_steps - 1);
  m.set_align_s(*planning - *aligning);
  m.set_measure_s(*first_step - *training - step_s);
  m.set_fit_steps_per_s(1.0 / std::max(step_s, 1e-9));
  m.set_run_s(*finished);
  return m;
}

absl::Status MeasureSecureThroughput(int records, v1::BenchMeasurement* result) {
  using namespace secure;  // NOLINT: the library under measurement
  ASSIGN_OR_RETURN(const PaillierPrivateKey key, PaillierPrivateKey::Generate());
  ASSIGN_OR_RETURN(const SlotLayout layout, SlotLayout::Create(std::vector<int>(6, 10), 2048));
  ASSIGN_OR_RETURN(SecureRandom rng, SecureRandom::FromOsEntropy());
  std::vector<std::vector<int32_t>> columns(6, std::vector<int32_t>(records));
  std::vector<int32_t> b_values(records);
  for (int i = 0; i < records; ++i) {
    for (int c = 0; c < 6; ++c) columns[c][i] = static_cast<int32_t>(rng.UniformBelow(10));
    b_values[i] = static_cast<int32_t>(rng.UniformBelow(10));
  }
  constexpr int kValues = 10;
  constexpr double kSigma = 10;
  std::vector<Ciphertext> encrypted;
  absl::Status status;
  const double encrypt_s = SecondsOf([&] {
    absl::StatusOr<std::vector<Ciphertext>> out = EncryptRecords(key, layout, columns, 1);
    if (out.ok()) encrypted = *std::move(out);
    status = out.status();
  });
  RETURN_IF_ERROR(status);
  std::vector<Ciphertext> sums;
  const double sum_s = SecondsOf([&] {
    absl::StatusOr<std::vector<Ciphertext>> out =
        SumByValue(key.public_key(), layout, encrypted, b_values, kValues, kSigma, rng);
    if (out.ok()) sums = *std::move(out);
    status = out.status();
  });
  RETURN_IF_ERROR(status);
  constexpr int kDecryptions = 5;
  const double decrypt_s = SecondsOf([&] {
    for (int i = 0; i < kDecryptions && status.ok(); ++i) {
      status = DecryptCounts(key, layout, sums, kValues, records, kSigma, rng).status();
    }
  });
  RETURN_IF_ERROR(status);
  result->set_encrypt_per_s(records / encrypt_s);
  result->set_sum_per_s(records / sum_s);
  result->set_decrypt_per_s(static_cast<double>(kDecryptions) * sums.size() / decrypt_s);
  return absl::OkStatus();
}

}  // namespace vfsynth::bench
