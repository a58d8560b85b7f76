#include "server/core/measured_marginals.h"

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/model_state.h"
#include "common/gan/model_factory.h"
#include "common/gan/stream_purposes.h"
#include "common/marginals/central_measurement.h"
#include "common/marginals/marginal_fit.h"
#include "common/marginals/party_measurement.h"
#include "common/privacy/privacy_plan.h"
#include "vfsynth/v1/checkpoint.pb.h"

namespace vfsynth {
namespace {

// The measurement is one exchange before the fit: its replies sit in round -1, at their
// task's step.
constexpr int64_t kMeasurementRound = -1;

}  // namespace

MeasuredMarginals::MeasuredMarginals(const v1::CuratorConfig& config)
    : config_(config), psi_({config.parties().begin(), config.parties().end()}) {}

MeasuredMarginals::~MeasuredMarginals() = default;

void MeasuredMarginals::Bind(CuratorRun* run) {
  run_ = run;
  inbox_ = std::make_unique<PartyInbox>(
      *run, [](const v1::PartyMessage& message) -> std::optional<ReplyPosition> {
        if (!message.has_measured_counts() && !message.has_sealed_list()) return std::nullopt;
        return ReplyPosition{message.round(), message.step()};
      });
}

absl::Status MeasuredMarginals::CheckAlign(int party, const v1::AlignRequest& request,
                                           const v1::RegisterRequest& registration) const {
  return CheckAlignRows(run_->roster[party], request, registration);
}

std::vector<const TableEncoder*> MeasuredMarginals::Encoders() const {
  return run_->registry.Encoders();
}

marginals::MeasuredLayout MeasuredMarginals::Layout() const {
  return marginals::LayoutOf(Encoders(), config_.training().label_column(),
                             config_.privacy().measurement());
}

absl::StatusOr<v1::AlignResponse> MeasuredMarginals::Align(int party,
                                                           const v1::AlignRequest& request) {
  ASSIGN_OR_RETURN(v1::AlignResponse response, psi_.Submit(party, request, run_->join));
  if (response.has_aligned()) {
    // Every party has registered by the last hop: the columns are the run's.
    for (const v1::PlannedColumn& column : Layout().columns) {
      *response.mutable_aligned()->add_columns() = column;
    }
  }
  return response;
}

absl::Status MeasuredMarginals::AcceptRecords(int64_t records) {
  spdlog::info("aligned {} records held by all {} parties", records, run_->roster.size());
  return absl::OkStatus();
}

std::string MeasuredMarginals::DescribeWaiting() const {
  return absl::StrCat("join timeout: parties that did not register and align: ",
                      absl::StrJoin(psi_.Waiting(), ", "));
}

absl::StatusOr<v1::PrivacyPlan> MeasuredMarginals::Plan(int64_t records) {
  // Settings the registered schemas cannot serve fail here, before any party is charged.
  RETURN_IF_ERROR(CheckConditionedColumn(config_.model(), Encoders()));
  return ResolveMarginalsPlan(config_.privacy(), config_.training(), Layout().columns,
                              static_cast<int>(run_->roster.size()), records);
}

void MeasuredMarginals::LogPlan(const v1::PrivacyPlan& plan, const std::string& digest) const {
  int cross = 0;
  for (const v1::MeasuredHistogram& m : plan.measurements()) cross += m.cross_party() ? 1 : 0;
  spdlog::info("privacy marginals: {} histograms over {} columns ({} across parties), plan {}",
               plan.measurements_size(), plan.columns_size(), cross, digest.substr(0, 16));
}

absl::Status MeasuredMarginals::Prepare(const v1::PrivacyPlan& plan) {
  plan_ = plan;
  const v1::TrainingConfig& t = config_.training();
  absl::MutexLock model_lock(&model_mu_);
  generator_ = MakeGenerator(config_.model(), t, Encoders());
  optimizer_ = MakeAdam((*generator_)->parameters(), t.lr_generator(), t);
  return absl::OkStatus();
}

absl::StatusOr<SavedState> MeasuredMarginals::Save() {
  absl::MutexLock model_lock(&model_mu_);
  v1::MarginalsCuratorState state;
  state.set_measured(!counts_.empty());
  for (const std::vector<int64_t>& histogram : counts_) {
    state.mutable_counts()->Add(histogram.begin(), histogram.end());
  }
  ASSIGN_OR_RETURN(*state.mutable_fit(), SaveGeneratorFit(**generator_, *optimizer_));
  SavedState saved;
  saved.checkpoint = state.SerializeAsString();
  ASSIGN_OR_RETURN(saved.generator, SavePublishedGenerator(**generator_));
  return saved;
}

absl::Status MeasuredMarginals::Restore(const std::string& payload) {
  v1::MarginalsCuratorState state;
  if (!state.ParseFromString(payload)) {
    return absl::DataLossError("the checkpoint is not a measured-marginals curator's");
  }
  counts_.clear();
  if (state.measured()) {
    int64_t at = 0;
    for (const v1::MeasuredHistogram& m : plan_.measurements()) {
      if (at + m.cells() > state.counts_size()) {
        return absl::DataLossError("the checkpoint holds fewer counts than the plan measures");
      }
      counts_.emplace_back(state.counts().begin() + at, state.counts().begin() + at + m.cells());
      at += m.cells();
    }
  }
  absl::MutexLock model_lock(&model_mu_);
  return RestoreGeneratorFit(state.fit(), **generator_, *optimizer_);
}

void MeasuredMarginals::SendTask(int party, int64_t step, v1::MarginalsTask task) {
  std::vector<v1::MarginalsTask> tasks;
  if (relay_hook_) {
    tasks = relay_hook_(party, std::move(task));
  } else {
    tasks.push_back(std::move(task));
  }
  for (v1::MarginalsTask& sent : tasks) {
    v1::CuratorMessage message = inbox_->Envelope(kMeasurementRound, step);
    *message.mutable_marginals_task() = std::move(sent);
    run_->hub.Send(party, std::move(message));
  }
}

absl::StatusOr<v1::PartyMessage> MeasuredMarginals::Expect(int party,
                                                           v1::PartyMessage::PayloadCase expected,
                                                           int64_t step,
                                                           const PartyInbox::CheckPayload& check) {
  // A party encrypts or receives every aligned record's ciphertext (about 2 ms each on one
  // core, docs/decisions/secure-counts.md): the wait grows with the records, with room for
  // a slower or busier machine.
  constexpr absl::Duration kWorkPerRecord = absl::Milliseconds(10);
  return inbox_->Expect(party, expected, kMeasurementRound, step, check,
                        kWorkPerRecord * plan_.records());
}

absl::Status MeasuredMarginals::TakeCounts(const v1::MeasuredCounts& answer,
                                           const std::vector<int>& histograms) {
  if (!std::equal(answer.histograms().begin(), answer.histograms().end(), histograms.begin(),
                  histograms.end())) {
    return absl::InvalidArgumentError("counts of other histograms than asked");
  }
  int64_t cells = 0;
  for (const int h : histograms) cells += plan_.measurements(h).cells();
  if (answer.counts_size() != cells) {
    return absl::InvalidArgumentError(
        absl::StrCat(answer.counts_size(), " counts for histograms of ", cells, " cells"));
  }
  int64_t at = 0;
  for (const int h : histograms) {
    const int64_t n = plan_.measurements(h).cells();
    counts_[h].assign(answer.counts().begin() + at, answer.counts().begin() + at + n);
    at += n;
  }
  return absl::OkStatus();
}

absl::Status MeasuredMarginals::Measure() {
  const int parties = static_cast<int>(run_->roster.size());
  const std::vector<marginals::CrossPair> pairs = marginals::CrossPairsOf(plan_);
  const int64_t pair_count = static_cast<int64_t>(pairs.size());
  // Steps: each party's own task (k), then per pair j its encryption (K + j), sums
  // (K + P + j) and decryption (K + 2P + j): increasing at every party, in send order.
  auto own_step = [](int k) { return static_cast<int64_t>(k); };
  auto pair_step = [&](int phase, size_t j) {
    return parties + phase * pair_count + static_cast<int64_t>(j);
  };
  counts_.assign(plan_.measurements_size(), {});
  run_->hub.BeginRound();
  std::vector<std::vector<int>> own(parties);
  for (int h = 0; h < plan_.measurements_size(); ++h) {
    const v1::MeasuredHistogram& m = plan_.measurements(h);
    if (!m.cross_party()) own[plan_.columns(m.columns(0)).party()].push_back(h);
  }
  for (int k = 0; k < parties; ++k) {
    v1::MarginalsTask task;
    task.mutable_own()->mutable_histograms()->Add(own[k].begin(), own[k].end());
    SendTask(k, own_step(k), std::move(task));
  }
  for (size_t j = 0; j < pairs.size(); ++j) {
    v1::MarginalsTask task;
    task.mutable_encrypt()->set_peer(run_->roster[pairs[j].high]);
    SendTask(pairs[j].low, pair_step(0, j), std::move(task));
  }
  for (int k = 0; k < parties; ++k) {
    RETURN_IF_ERROR(
        Expect(k, v1::PartyMessage::kMeasuredCounts, own_step(k), [&](const v1::PartyMessage& m) {
          return TakeCounts(m.measured_counts(), own[k]);
        }).status());
  }
  // The lists are relayed as they are: the curator can neither open nor alter them.
  auto expect_list = [&](int party, int64_t step,
                         const std::string& peer) -> absl::StatusOr<std::string> {
    ASSIGN_OR_RETURN(
        v1::PartyMessage answer,
        Expect(party, v1::PartyMessage::kSealedList, step,
               [&](const v1::PartyMessage& m) -> absl::Status {
                 if (m.sealed_list().peer() != peer || m.sealed_list().sealed().empty()) {
                   return absl::InvalidArgumentError(
                       absl::StrCat("expected a list for '", peer, "'"));
                 }
                 return absl::OkStatus();
               }));
    return std::move(*answer.mutable_sealed_list()->mutable_sealed());
  };
  std::vector<std::string> records(pairs.size());
  for (size_t j = 0; j < pairs.size(); ++j) {
    ASSIGN_OR_RETURN(records[j],
                     expect_list(pairs[j].low, pair_step(0, j), run_->roster[pairs[j].high]));
    v1::MarginalsTask task;
    task.mutable_sum()->set_peer(run_->roster[pairs[j].low]);
    task.mutable_sum()->set_sealed(records[j]);
    SendTask(pairs[j].high, pair_step(1, j), std::move(task));
  }
  for (size_t j = 0; j < pairs.size(); ++j) {
    ASSIGN_OR_RETURN(const std::string sums,
                     expect_list(pairs[j].high, pair_step(1, j), run_->roster[pairs[j].low]));
    v1::MarginalsTask task;
    task.mutable_decrypt()->set_peer(run_->roster[pairs[j].high]);
    task.mutable_decrypt()->set_sealed(sums);
    task.mutable_decrypt()->mutable_histograms()->Add(pairs[j].histograms.begin(),
                                                      pairs[j].histograms.end());
    SendTask(pairs[j].low, pair_step(2, j), std::move(task));
  }
  for (size_t j = 0; j < pairs.size(); ++j) {
    RETURN_IF_ERROR(Expect(pairs[j].low, v1::PartyMessage::kMeasuredCounts, pair_step(2, j),
                           [&](const v1::PartyMessage& m) {
                             return TakeCounts(m.measured_counts(), pairs[j].histograms);
                           })
                        .status());
  }
  spdlog::info("measured {} histograms ({} pairs of parties counted securely)",
               plan_.measurements_size(), pairs.size());
  return absl::OkStatus();
}

absl::StatusOr<MarginalTarget> MeasuredMarginals::Target() const {
  ASSIGN_OR_RETURN(const MarginalTarget shape, marginals::ReleaseShape(Layout().blocks, plan_));
  std::vector<torch::Tensor> counts;
  for (const std::vector<int64_t>& histogram : counts_) {
    counts.push_back(torch::tensor(histogram, torch::kLong).to(torch::kDouble));
  }
  return marginals::TargetFromCounts(shape, counts, plan_.records());
}

absl::Status MeasuredMarginals::Train(int64_t first_round) {
  const v1::TrainingConfig& t = config_.training();
  if (counts_.empty()) {
    RETURN_IF_ERROR(Measure());
    // Durable before the fit: a resumed curator fits to these counts, never measures again.
    ASSIGN_OR_RETURN(const SavedState state, Save());
    RETURN_IF_ERROR(run_->checkpoints.Write(first_round, state));
  }
  // The fit's rate and ETA count from here, not from the measurement's start.
  run_->status.StartRounds(first_round);
  ASSIGN_OR_RETURN(const MarginalTarget target, Target());
  marginals::FitOptions fit;
  fit.batch_size = t.batch_size();
  fit.learning_rate = t.lr_generator();
  fit.reverse_weight = t.experimental().marginal_reverse_weight();
  fit.stream_key = CuratorStreamKey(t.seed());
  spdlog::info("fitting G to {} released histograms: {} steps of batch {}", counts_.size(),
               t.rounds(), t.batch_size());
  for (int64_t round = first_round; round < t.rounds(); ++round) {
    fit.steps = round + 1;
    double loss = 0;
    {
      absl::MutexLock model_lock(&model_mu_);
      RETURN_IF_ERROR(
          marginals::FitGenerator(*generator_, *optimizer_, target, fit, round, 1,
                                  [&](const marginals::FitProgress& p) { loss = p.loss; }));
    }
    if (run_->checkpoints.Due(round + 1, t.rounds())) {
      ASSIGN_OR_RETURN(const SavedState state, Save());
      RETURN_IF_ERROR(run_->checkpoints.Write(round + 1, state));
    }
    const RunStatus::Progress progress = run_->status.CompleteRound(round + 1);
    if (progress.due) {
      spdlog::info("fit step {}/{} loss={:.4f} steps/s={:.2f} eta={:.0f}s", round + 1, t.rounds(),
                   loss, progress.rounds_per_second, progress.eta_seconds);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CsvTable> MeasuredMarginals::Sample(int64_t rows) {
  const std::vector<const TableEncoder*> encoders = Encoders();
  absl::MutexLock model_lock(&model_mu_);
  if (!generator_.has_value()) return absl::FailedPreconditionError("training has not started");
  at::init_num_threads();  // a Sample call may run on a gRPC thread: the configured count
  (*generator_)->eval();
  CsvTable table = SampleSyntheticTable(*generator_, config_.training().seed(), rows, encoders);
  (*generator_)->train();
  return table;
}

void MeasuredMarginals::Cancel(const absl::Status& reason) { psi_.Cancel(reason); }

}  // namespace vfsynth
