#include "tests/bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace vfsynth::bench {
namespace {

struct Work {
  double compute = 0;
  double codec = 0;
  double durability = 0;
  double busy() const { return compute + codec + durability; }
  Work& operator+=(const Work& other) {
    compute += other.compute;
    codec += other.codec;
    durability += other.durability;
    return *this;
  }
};

using SampleIndex = absl::flat_hash_map<std::pair<int, int64_t>, Work>;

SampleIndex IndexSamples(const v1::StepProfile& profile) {
  SampleIndex index;
  for (const v1::StepSample& s : profile.samples()) {
    index[{s.kind(), s.index()}] = Work{s.compute_ms(), s.codec_ms(), s.durability_ms()};
  }
  return index;
}

Work Find(const SampleIndex& index, v1::StepKind kind, int64_t step) {
  auto it = index.find({kind, step});
  return it == index.end() ? Work() : it->second;
}

// What a party did that the curator's step (kind, index) waited for.
Work PartyWork(const SampleIndex& party, v1::StepKind kind, int64_t index, int n_critic) {
  Work work = Find(party, kind, index);
  if (kind == v1::STEP_GENERATOR) work += Find(party, v1::STEP_GENERATOR_GRADIENT, index);
  int64_t previous_update = -1;
  if (kind == v1::STEP_CRITIC && index % n_critic != 0) previous_update = index - 1;
  if (kind == v1::STEP_GENERATOR) previous_update = index * n_critic + n_critic - 1;
  if (previous_update >= 0) work += Find(party, v1::STEP_CRITIC_UPDATE, previous_update);
  return work;
}

std::string Ms(double ms) {
  return ms >= 100 ? absl::StrFormat("%.0f", ms) : absl::StrFormat("%.2f", ms);
}
std::string Ratio(double r) { return absl::StrFormat("%.2f", r); }

}  // namespace

double Median(std::vector<double> values) { return Percentile(std::move(values), 0.5); }

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = p * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

v1::BenchBreakdown Summarize(const v1::StepProfile& curator,
                             const std::vector<v1::StepProfile>& parties, v1::StepKind kind,
                             int n_critic, int64_t first_round) {
  const int64_t first_index = kind == v1::STEP_CRITIC ? first_round * n_critic : first_round;
  std::vector<SampleIndex> party_index;
  for (const v1::StepProfile& p : parties) party_index.push_back(IndexSamples(p));
  std::vector<double> total, compute, codec, wait, transport;
  std::vector<std::vector<Work>> work(parties.size());
  for (const v1::StepSample& s : curator.samples()) {
    if (s.kind() != kind || s.index() < first_index) continue;
    total.push_back(s.total_ms());
    compute.push_back(s.compute_ms());
    codec.push_back(s.codec_ms());
    wait.push_back(s.wait_ms());
    double slowest = 0;
    for (size_t k = 0; k < parties.size(); ++k) {
      work[k].push_back(PartyWork(party_index[k], kind, s.index(), n_critic));
      slowest = std::max(slowest, work[k].back().busy());
    }
    transport.push_back(std::max(0.0, s.wait_ms() - slowest));
  }
  v1::BenchBreakdown b;
  b.set_total_ms(Median(total));
  b.set_p90_total_ms(Percentile(total, 0.9));
  b.set_curator_compute_ms(Median(compute));
  b.set_curator_codec_ms(Median(codec));
  b.set_wait_ms(Median(wait));
  b.set_transport_ms(Median(transport));
  double party_compute = 0, party_codec = 0, party_durability = 0;
  for (const std::vector<Work>& w : work) {
    std::vector<double> c, x, d;
    for (const Work& one : w) {
      c.push_back(one.compute);
      x.push_back(one.codec);
      d.push_back(one.durability);
    }
    party_compute += Median(c);
    party_codec += Median(x);
    party_durability += Median(d);
  }
  const double n = std::max<double>(1, static_cast<double>(parties.size()));
  b.set_party_compute_ms(party_compute / n);
  b.set_party_codec_ms(party_codec / n);
  b.set_party_durability_ms(party_durability / n);
  return b;
}

double CheckpointMs(const v1::StepProfile& curator) {
  std::vector<double> ms;
  for (const v1::StepSample& s : curator.samples()) {
    if (s.kind() == v1::STEP_CHECKPOINT) ms.push_back(s.total_ms());
  }
  return Median(ms);
}

double MinimalBytesPerRound(int batch, int width, int feature_dim, int n_critic) {
  const double critic = static_cast<double>(batch) * (width + 4.0 * feature_dim);
  const double generator = static_cast<double>(batch) * (2.0 * width + 2.0 * feature_dim);
  return 4.0 * (n_critic * critic + generator);
}

v1::BenchTargets ComputeTargets(const std::vector<v1::BenchCase>& cases) {
  v1::BenchTargets t;
  // (preset, batch, mode) -> K -> critic ms; (preset, K, batch) -> mode -> round ms.
  std::map<std::tuple<std::string, int, std::string>, std::map<int, double>> by_k;
  std::map<std::tuple<std::string, int, int>, std::map<std::string, double>> by_mode;
  for (const v1::BenchCase& c : cases) {
    if (c.preset() == "vflgan" && c.mode() == "none") {
      t.set_vflgan_critic_ms(c.critic().total_ms());
      t.set_vflgan_generator_ms(c.generator().total_ms());
    }
    if (c.preset() == "default" && c.parties() == 3 && c.batch_size() == 256 &&
        c.mode() == "none") {
      t.set_k3_b256_none_critic_ratio(c.critic_ratio());
    }
    if (c.wire().rounds() > 0)
      t.set_max_wire_ratio(std::max(t.max_wire_ratio(), c.wire().tcp_ratio()));
    if (c.preset() == "default")
      by_k[{c.preset(), c.batch_size(), c.mode()}][c.parties()] = c.critic().total_ms();
    by_mode[{c.preset(), c.parties(), c.batch_size()}][c.mode()] = c.round_ms();
  }
  for (const auto& [key, times] : by_k) {
    if (times.size() < 2) continue;
    const auto& [k_min, t_min] = *times.begin();
    for (const auto& [k, ms] : times) {
      if (k == k_min || t_min <= 0) continue;
      const double growth = (ms / t_min) / (static_cast<double>(k) / k_min);
      t.set_max_growth_vs_linear(std::max(t.max_growth_vs_linear(), growth));
    }
  }
  for (const auto& [key, modes] : by_mode) {
    auto none = modes.find("none");
    if (none == modes.end() || none->second <= 0) continue;
    if (auto it = modes.find("dpsgd"); it != modes.end()) {
      t.set_max_dpsgd_over_none(std::max(t.max_dpsgd_over_none(), it->second / none->second));
    }
    if (auto it = modes.find("strict"); it != modes.end()) {
      t.set_max_strict_over_none(std::max(t.max_strict_over_none(), it->second / none->second));
    }
  }
  return t;
}

std::string MarkdownTables(const v1::BenchReport& report) {
  std::string out;
  absl::StrAppend(
      &out,
      "| case | d_k | reference critic ms | distributed critic ms | ratio | reference generator ms "
      "| distributed generator ms | ratio | round ms |\n",
      "|---|---|---|---|---|---|---|---|---|\n");
  for (const v1::BenchCase& c : report.cases()) {
    absl::StrAppend(&out, "| ", c.name(), " | ", absl::StrJoin(c.party_widths(), "/"), " | ",
                    Ms(c.reference_critic_ms()), " | ", Ms(c.critic().total_ms()), " | ",
                    Ratio(c.critic_ratio()), " | ", Ms(c.reference_generator_ms()), " | ",
                    Ms(c.generator().total_ms()), " | ", Ratio(c.generator_ratio()), " | ",
                    Ms(c.round_ms()), " |\n");
  }
  absl::StrAppend(
      &out, "\nCritic step breakdown (ms, medians):\n\n",
      "| case | total | p90 | curator compute | curator codec | wait | party compute | party codec "
      "| party durability | transport | checkpoint/round |\n",
      "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const v1::BenchCase& c : report.cases()) {
    const v1::BenchBreakdown& b = c.critic();
    absl::StrAppend(&out, "| ", c.name(), " | ", Ms(b.total_ms()), " | ", Ms(b.p90_total_ms()),
                    " | ", Ms(b.curator_compute_ms()), " | ", Ms(b.curator_codec_ms()), " | ",
                    Ms(b.wait_ms()), " | ", Ms(b.party_compute_ms()), " | ", Ms(b.party_codec_ms()),
                    " | ", Ms(b.party_durability_ms()), " | ", Ms(b.transport_ms()), " | ",
                    Ms(c.checkpoint_ms()), " |\n");
  }
  absl::StrAppend(
      &out, "\nWire bytes per round per party (n_critic critic steps + 1 generator step):\n\n",
      "| case | minimal | protobuf messages | ratio | TCP (TLS, HTTP/2, gRPC) | ratio |\n",
      "|---|---|---|---|---|---|\n");
  for (const v1::BenchCase& c : report.cases()) {
    const v1::BenchWire& w = c.wire();
    if (w.rounds() == 0) continue;
    absl::StrAppend(&out, "| ", c.name(), " | ", absl::StrFormat("%.0f", w.minimal_bytes()), " | ",
                    absl::StrFormat("%.0f", w.message_bytes()), " | ",
                    absl::StrFormat("%.4f", w.message_ratio()), " | ",
                    absl::StrFormat("%.0f", w.tcp_bytes()), " | ",
                    absl::StrFormat("%.4f", w.tcp_ratio()), " |\n");
  }
  const v1::BenchTargets& t = report.targets();
  absl::StrAppend(&out, "\n| target | measured | goal |\n|---|---|---|\n",
                  "| VFLGAN Adult sizes, critic step (ms) | ", Ms(t.vflgan_critic_ms()),
                  " | <= 5 (VFLGAN code: 15.8) |\n", "| VFLGAN Adult sizes, generator step (ms) | ",
                  Ms(t.vflgan_generator_ms()), " | (VFLGAN code: 7.1) |\n",
                  "| K=3, B=256, none: distributed / reference critic | ",
                  Ratio(t.k3_b256_none_critic_ratio()), " | <= 1.3 |\n",
                  "| wire / minimal payload (TCP) | ", absl::StrFormat("%.4f", t.max_wire_ratio()),
                  " | <= 1.05 |\n", "| critic step growth in K, relative to linear | ",
                  Ratio(t.max_growth_vs_linear()), " | <= 1 |\n", "| dpsgd / none per round | ",
                  Ratio(t.max_dpsgd_over_none()), " | <= 2 |\n", "| strict / none per round | ",
                  Ratio(t.max_strict_over_none()), " | <= 2 |\n");
  if (report.measurements_size() == 0) return out;
  absl::StrAppend(
      &out, "\nMeasured marginals (privacy.mode marginals) through the daemons:\n\n",
      "| case | records | columns | histograms (across parties) | align s | measure s | fit "
      "steps/s | run s | encrypt /s | sum /s | decrypt /s |\n",
      "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const v1::BenchMeasurement& m : report.measurements()) {
    absl::StrAppend(
        &out, "| ", m.name(), " | ", m.records(), " | ", m.columns(), " | ", m.histograms(), " (",
        m.cross_histograms(), ") | ", absl::StrFormat("%.1f", m.align_s()), " | ",
        absl::StrFormat("%.1f", m.measure_s()), " | ", absl::StrFormat("%.1f", m.fit_steps_per_s()),
        " | ", absl::StrFormat("%.1f", m.run_s()), " | ", absl::StrFormat("%.0f", m.encrypt_per_s()),
        " | ", absl::StrFormat("%.0f", m.sum_per_s()), " | ",
        absl::StrFormat("%.0f", m.decrypt_per_s()), " |\n");
  }
  return out;
}

}  // namespace vfsynth::bench
