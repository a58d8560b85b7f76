// vfsynth-bench: critic and generator step times of the single-process reference
// trainer vs the distributed system (in-process curator, vfsynth-party processes,
// loopback mTLS), the breakdown of a step, and wire bytes vs the minimal payload.
// Writes a JSON report (vfsynth.v1.BenchReport) and prints markdown tables;
// docs/performance.md has the numbers and how to reproduce them.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/base/cli.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/csv.h"
#include "tests/bench/bench_cases.h"
#include "tests/bench/bench_fixture.h"
#include "tests/bench/bench_report.h"
#include "tests/bench/distributed_bench.h"
#include "tests/bench/measurement_bench.h"
#include "tests/bench/reference_bench.h"

ABSL_FLAG(std::string, grid, "full",
          "full: K 2,3,5,8 x B 64,256,1024 x none,dpsgd,strict + VFLGAN sizes; smoke: a tiny grid");
ABSL_FLAG(std::string, parties, "", "override the grid's party counts, e.g. 2,3");
ABSL_FLAG(std::string, batches, "", "override the grid's batch sizes, e.g. 64,256");
ABSL_FLAG(std::string, modes, "", "override the grid's privacy modes, e.g. none,strict");
ABSL_FLAG(std::string, vflgan_modes, "",
          "override the modes of the VFLGAN-size cases ('-' for none of them)");
ABSL_FLAG(std::string, out, "bench.json", "JSON report (vfsynth.v1.BenchReport)");
ABSL_FLAG(std::string, markdown, "", "also write the markdown tables here");
ABSL_FLAG(std::string, work_dir, "/tmp/vfsynth-bench",
          "party files, certificates, checkpoints, logs");
ABSL_FLAG(std::string, party_binary, "", "vfsynth-party (default: next to this binary)");
ABSL_FLAG(double, budget_seconds, 8, "target duration of one distributed run's measured rounds");
ABSL_FLAG(double, reference_budget_seconds, 2, "target duration of one reference timing");
ABSL_FLAG(int32_t, min_rounds, 2, "fewest measured rounds (after the warm-up round)");
ABSL_FLAG(int32_t, max_rounds, 30, "most measured rounds (after the warm-up round)");
ABSL_FLAG(int32_t, n_critic, 5, "critic steps per round");
ABSL_FLAG(int32_t, curator_threads, 1, "LibTorch threads of the curator");
ABSL_FLAG(int32_t, party_threads, 1, "LibTorch threads of each party");
ABSL_FLAG(std::string, reference_threads, "1,2",
          "LibTorch thread counts to time the reference trainer with; the fastest is compared");
ABSL_FLAG(bool, wire, true,
          "count wire bytes in an extra short run through a TCP relay (mode none)");
ABSL_FLAG(std::string, measured, "",
          "measured-marginals cases, e.g. adult-k3,wide-k3 (wide: 45,000 records, 17 columns); "
          "default: both with --grid full, none with --grid smoke");
ABSL_FLAG(int64_t, measured_records, 0,
          "measured-marginals cases: the first N records of each party (0: all)");
ABSL_FLAG(int32_t, measured_fit_steps, 50, "measured-marginals cases: fit steps to time");
ABSL_FLAG(int32_t, throughput_records, 2000,
          "records encrypted, summed and decrypted for the secure counts' throughput");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");
ABSL_FLAG(std::string, party_log_level, "warn",
          "log level of the party processes (logs under --work_dir)");

namespace vfsynth::bench {
namespace {

template <typename T>
absl::StatusOr<std::vector<T>> ParseList(const std::string& text, std::vector<T> fallback) {
  if (text.empty()) return fallback;
  std::vector<T> values;
  if (text == "-") return values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    if constexpr (std::is_same_v<T, int>) {
      int value = 0;
      if (!absl::SimpleAtoi(part, &value))
        return absl::InvalidArgumentError(absl::StrCat("not a number: ", part));
      values.push_back(value);
    } else {
      values.emplace_back(part);
    }
  }
  return values;
}

absl::StatusOr<std::vector<BenchCase>> Grid() {
  const bool smoke = absl::GetFlag(FLAGS_grid) == "smoke";
  if (!smoke && absl::GetFlag(FLAGS_grid) != "full")
    return absl::InvalidArgumentError("--grid is full or smoke");
  ASSIGN_OR_RETURN(const auto parties,
                   ParseList<int>(absl::GetFlag(FLAGS_parties),
                                  smoke ? std::vector<int>{2} : std::vector<int>{2, 3, 5, 8}));
  ASSIGN_OR_RETURN(const auto batches,
                   ParseList<int>(absl::GetFlag(FLAGS_batches),
                                  smoke ? std::vector<int>{64} : std::vector<int>{64, 256, 1024}));
  const std::vector<std::string> all_modes = {"none", "dpsgd", "strict"};
  ASSIGN_OR_RETURN(const auto modes, ParseList<std::string>(absl::GetFlag(FLAGS_modes), all_modes));
  ASSIGN_OR_RETURN(const auto vflgan,
                   ParseList<std::string>(absl::GetFlag(FLAGS_vflgan_modes), {"none"}));
  return MakeGrid(parties, batches, modes, vflgan);
}

std::string PartyBinary() {
  if (!absl::GetFlag(FLAGS_party_binary).empty()) return absl::GetFlag(FLAGS_party_binary);
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "vfsynth-party").string();
}

// One round of the reference trainer: n_critic critic steps and a generator step (ms).
double RoundMs(const ReferenceTiming& timing, int n_critic) {
  return n_critic * Median(timing.critic_ms) + Median(timing.generator_ms);
}

// Rounds to measure so that a run takes about the budget, from the reference's
// round time (DP steps cost more than the reference's non-private ones).
int MeasuredRounds(const BenchCase& c, const ReferenceTiming& reference, int n_critic) {
  const double round_ms = RoundMs(reference, n_critic);
  const double factor = c.mode == "none" ? 3.0 : 4.0;
  const int rounds = static_cast<int>(absl::GetFlag(FLAGS_budget_seconds) * 1000 /
                                      std::max(1e-3, factor * round_ms));
  return std::clamp(rounds, absl::GetFlag(FLAGS_min_rounds), absl::GetFlag(FLAGS_max_rounds));
}

absl::StatusOr<DistributedResult> Distributed(const BenchCase& c, const RunSettings& settings,
                                              const Fixture& f, bool relay,
                                              bool watch_status = false) {
  std::filesystem::remove_all(settings.dir);  // checkpoints of an earlier run would be refused
  DistributedOptions options;
  ASSIGN_OR_RETURN(options.curator, CuratorConfigFor(c, settings, f));
  for (size_t k = 0; k < f.names.size(); ++k) {
    // A placeholder address: RunDistributed sets the curator's once it listens.
    ASSIGN_OR_RETURN(v1::PartyConfig party,
                     PartyConfigFor(c, settings, f, static_cast<int>(k), "127.0.0.1:1"));
    options.parties.push_back(std::move(party));
  }
  options.party_binary = PartyBinary();
  options.dir = settings.dir + "/logs";
  options.relay = relay;
  options.watch_status = watch_status;
  options.party_log_level = absl::GetFlag(FLAGS_party_log_level);
  return RunDistributed(options);
}

// "adult-k3" / "wide-k3": the measured-marginals case on that table with K parties.
absl::StatusOr<std::vector<BenchCase>> MeasuredCases() {
  std::string list = absl::GetFlag(FLAGS_measured);
  if (list.empty() && absl::GetFlag(FLAGS_grid) == "full") list = "adult-k3,wide-k3";
  std::vector<BenchCase> cases;
  if (list.empty() || list == "-") return cases;
  for (absl::string_view name : absl::StrSplit(list, ',')) {
    const std::vector<std::string> parts = absl::StrSplit(name, "-k");
    int parties = 0;
    if (parts.size() != 2 || (parts[0] != "adult" && parts[0] != "wide") ||
        !absl::SimpleAtoi(parts[1], &parties)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--measured: ", name, " is not adult-kK or wide-kK"));
    }
    cases.push_back({parts[0] == "adult" ? "default" : "wide", parties, 1024, "marginals"});
  }
  return cases;
}

// `f` with each party's data cut to its first `records` rows (the same records at every
// party: a split keeps the source's order).
absl::StatusOr<Fixture> FirstRecords(Fixture f, int64_t records, const std::string& dir) {
  if (records <= 0) return f;
  RETURN_IF_ERROR(MakeDirectories(dir));
  for (size_t k = 0; k < f.data.size(); ++k) {
    ASSIGN_OR_RETURN(CsvTable table, ReadCsv(f.data[k]));
    if (static_cast<int64_t>(table.rows.size()) > records) table.rows.resize(records);
    f.data[k] = absl::StrCat(dir, "/", f.names[k], ".csv");
    RETURN_IF_ERROR(WriteCsv(f.data[k], table));
  }
  return f;
}

// One measured-marginals run through the daemons, then the throughput on this thread.
absl::StatusOr<v1::BenchMeasurement> RunMeasuredCase(const BenchCase& c, const Fixture& full,
                                                     RunSettings settings) {
  const std::string work = absl::GetFlag(FLAGS_work_dir);
  ASSIGN_OR_RETURN(const Fixture f, FirstRecords(full, absl::GetFlag(FLAGS_measured_records),
                                                 absl::StrCat(work, "/records/", c.name())));
  settings.rounds = absl::GetFlag(FLAGS_measured_fit_steps);
  settings.dir = absl::StrCat(work, "/runs/", c.name());
  ASSIGN_OR_RETURN(const DistributedResult run,
                   Distributed(c, settings, f, /*relay=*/false, /*watch_status=*/true));
  ASSIGN_OR_RETURN(v1::BenchMeasurement m, SummarizeMeasurementRun(run, settings.rounds));
  m.set_name(absl::StrCat(c.preset == "wide" ? "wide" : "adult", "-k", c.parties));
  m.set_parties(c.parties);
  RETURN_IF_ERROR(MeasureSecureThroughput(absl::GetFlag(FLAGS_throughput_records), &m));
  return m;
}

absl::StatusOr<v1::BenchCase> RunCase(const BenchCase& c, const Fixture& f,
                                      const ReferenceTiming& reference, RunSettings settings) {
  const int n_critic = settings.n_critic;
  v1::BenchCase result;
  result.set_name(c.name());
  result.set_preset(c.preset);
  result.set_parties(c.parties);
  result.set_batch_size(c.batch);
  result.set_mode(c.mode);
  for (int w : f.widths) result.add_party_widths(w);
  v1::ModelConfig model = BenchModel(c.preset);
  RETURN_IF_ERROR(ResolveModelConfig(&model));  // the width the run uses, defaults included
  result.set_feature_dim(model.feature_dim());
  result.set_n_critic(n_critic);
  result.set_reference_steps(static_cast<int>(reference.critic_ms.size()));
  result.set_reference_threads(reference.threads);
  result.set_reference_critic_ms(Median(reference.critic_ms));
  result.set_reference_generator_ms(Median(reference.generator_ms));

  const int measured = MeasuredRounds(c, reference, n_critic);
  settings.rounds = measured + 1;
  settings.dir = absl::StrCat(absl::GetFlag(FLAGS_work_dir), "/runs/", c.name());
  ASSIGN_OR_RETURN(const DistributedResult run, Distributed(c, settings, f, /*relay=*/false));
  result.set_measured_rounds(measured);
  *result.mutable_critic() = Summarize(run.curator, run.parties, v1::STEP_CRITIC, n_critic, 1);
  *result.mutable_generator() =
      Summarize(run.curator, run.parties, v1::STEP_GENERATOR, n_critic, 1);
  result.set_checkpoint_ms(CheckpointMs(run.curator));
  result.set_round_ms(n_critic * result.critic().total_ms() + result.generator().total_ms() +
                      result.checkpoint_ms());
  result.set_critic_ratio(result.critic().total_ms() /
                          std::max(1e-9, result.reference_critic_ms()));
  result.set_generator_ratio(result.generator().total_ms() /
                             std::max(1e-9, result.reference_generator_ms()));

  if (c.mode == "none" && absl::GetFlag(FLAGS_wire)) {
    settings.rounds = 4;
    ASSIGN_OR_RETURN(const DistributedResult wire, Distributed(c, settings, f, /*relay=*/true));
    v1::BenchWire* w = result.mutable_wire();
    const double per = static_cast<double>(std::max(1, wire.counted_rounds)) * c.parties;
    double minimal = 0;
    for (int width : f.widths)
      minimal += MinimalBytesPerRound(c.batch, width, result.feature_dim(), n_critic);
    w->set_rounds(wire.counted_rounds);
    w->set_tcp_bytes(static_cast<double>(wire.tcp_bytes) / per);
    w->set_message_bytes(static_cast<double>(wire.message_bytes) / per);
    w->set_minimal_bytes(minimal / c.parties);
    w->set_tcp_ratio(w->tcp_bytes() / w->minimal_bytes());
    w->set_message_ratio(w->message_bytes() / w->minimal_bytes());
  }
  return result;
}

// The reference trainer timed with each --reference_threads count; the fastest round wins.
absl::StatusOr<ReferenceTiming> FastestReference(const BenchCase& c, RunSettings settings,
                                                 const Fixture& f) {
  ASSIGN_OR_RETURN(const std::vector<int> threads,
                   ParseList<int>(absl::GetFlag(FLAGS_reference_threads), {1}));
  std::optional<ReferenceTiming> best;
  double best_round = 0;
  for (int t : threads) {
    settings.reference_threads = t;
    settings.rounds = absl::GetFlag(FLAGS_max_rounds) + 1;
    ASSIGN_OR_RETURN(const v1::LocalRunConfig config, ReferenceConfig(c, settings, f));
    ASSIGN_OR_RETURN(
        ReferenceTiming timing,
        TimeReference(config, absl::Seconds(absl::GetFlag(FLAGS_reference_budget_seconds)),
                      absl::GetFlag(FLAGS_min_rounds)));
    const double round = RoundMs(timing, settings.n_critic);
    if (!best.has_value() || round < best_round) {
      best = std::move(timing);
      best_round = round;
    }
  }
  if (!best.has_value())
    return absl::InvalidArgumentError("--reference_threads lists no thread count");
  return *std::move(best);
}

absl::Status Main(const std::string& command) {
  ASSIGN_OR_RETURN(const std::vector<BenchCase> cases, Grid());
  const std::string work = absl::GetFlag(FLAGS_work_dir);
  RETURN_IF_ERROR(MakeDirectories(work));
  RunSettings settings;
  settings.n_critic = absl::GetFlag(FLAGS_n_critic);
  settings.curator_threads = absl::GetFlag(FLAGS_curator_threads);
  settings.party_threads = absl::GetFlag(FLAGS_party_threads);

  v1::BenchReport report;
  report.set_date(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()));
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  report.set_host(host);
  report.set_cores(static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
  report.set_command(command);
  report.set_curator_threads(settings.curator_threads);
  report.set_party_threads(settings.party_threads);
  report.set_reference_threads(absl::GetFlag(FLAGS_reference_threads));
  report.set_checkpoint_dir(work + "/runs");
  report.set_blas_core(BlasCoreName());

  std::map<std::pair<int, std::string>, Fixture> fixtures;
  std::map<std::tuple<std::string, int, int>, ReferenceTiming> references;
  for (const BenchCase& c : cases) {
    const absl::Time start = absl::Now();
    auto fixture = fixtures.find({c.parties, c.preset});
    if (fixture == fixtures.end()) {
      ASSIGN_OR_RETURN(Fixture f, PrepareFixture(work, c.parties, c.preset));
      fixture = fixtures.emplace(std::make_pair(c.parties, c.preset), std::move(f)).first;
    }
    auto reference = references.find({c.preset, c.parties, c.batch});
    if (reference == references.end()) {
      ASSIGN_OR_RETURN(ReferenceTiming timing, FastestReference(c, settings, fixture->second));
      reference =
          references.emplace(std::make_tuple(c.preset, c.parties, c.batch), std::move(timing))
              .first;
    }
    ASSIGN_OR_RETURN(v1::BenchCase result,
                     RunCase(c, fixture->second, reference->second, settings));
    spdlog::info(
        "{}: critic {:.2f} ms (reference {:.2f}), generator {:.2f} ms (reference {:.2f}), {} "
        "rounds, {:.0f} s",
        result.name(), result.critic().total_ms(), result.reference_critic_ms(),
        result.generator().total_ms(), result.reference_generator_ms(), result.measured_rounds(),
        absl::ToDoubleSeconds(absl::Now() - start));
    *report.add_cases() = std::move(result);
    // Written after every case, so a long run that stops early still leaves its numbers.
    *report.mutable_targets() = ComputeTargets({report.cases().begin(), report.cases().end()});
    ASSIGN_OR_RETURN(const std::string json, ToJson(report, /*include_defaults=*/true));
    RETURN_IF_ERROR(WriteFileAtomically(absl::GetFlag(FLAGS_out), json));
  }
  ASSIGN_OR_RETURN(const std::vector<BenchCase> measured, MeasuredCases());
  for (const BenchCase& c : measured) {
    auto fixture = fixtures.find({c.parties, c.preset});
    if (fixture == fixtures.end()) {
      ASSIGN_OR_RETURN(Fixture f, PrepareFixture(work, c.parties, c.preset));
      fixture = fixtures.emplace(std::make_pair(c.parties, c.preset), std::move(f)).first;
    }
    ASSIGN_OR_RETURN(v1::BenchMeasurement m, RunMeasuredCase(c, fixture->second, settings));
    spdlog::info("{}: {} records, {} histograms ({} across parties): align {:.1f} s, measure "
                 "{:.1f} s, fit {:.1f} steps/s; one core: encrypt {:.0f}/s, sum {:.0f}/s, "
                 "decrypt {:.0f}/s",
                 m.name(), m.records(), m.histograms(), m.cross_histograms(), m.align_s(),
                 m.measure_s(), m.fit_steps_per_s(), m.encrypt_per_s(), m.sum_per_s(),
                 m.decrypt_per_s());
    *report.add_measurements() = std::move(m);
    ASSIGN_OR_RETURN(const std::string json, ToJson(report, /*include_defaults=*/true));
    RETURN_IF_ERROR(WriteFileAtomically(absl::GetFlag(FLAGS_out), json));
  }
  const std::string tables = MarkdownTables(report);
  std::cout << tables;
  if (!absl::GetFlag(FLAGS_markdown).empty())
    RETURN_IF_ERROR(WriteFileAtomically(absl::GetFlag(FLAGS_markdown), tables));
  return absl::OkStatus();
}

}  // namespace
}  // namespace vfsynth::bench

int main(int argc, char** argv) {
  vfsynth::EnsurePassiveOpenMpWait(argv);
  vfsynth::TuneMemoryAllocator();
  absl::SetProgramUsageMessage(
      "vfsynth-bench [--grid full|smoke] [--out bench.json] [--markdown tables.md]");
  std::vector<std::string> args = vfsynth::NormalizeFlagNames(argc, argv);
  std::vector<char*> raw;
  for (std::string& arg : args) raw.push_back(arg.data());
  absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data());
  vfsynth::InitLogging("bench", absl::GetFlag(FLAGS_log_level));
  const absl::Status status = vfsynth::bench::Main(absl::StrJoin(args, " "));
  if (!status.ok()) {
    spdlog::error("{}", status.ToString());
    return 1;
  }
  return 0;
}
