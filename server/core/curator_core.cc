#include "server/core/curator_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/data/csv.h"
#include "common/data/schema_limits.h"
#include "common/nn/intra_op_threads.h"
#include "common/nn/torch_boundary.h"
#include "common/postgres/postgres_target.h"
#include "common/privacy/privacy_plan.h"
#include "common/privacy/run_accounting.h"
#include "common/protocol/protocol_version.h"
#include "server/core/curator_checkpoint.h"
#include "server/core/generator_artefact.h"
#include "server/core/generator_synthesis.h"
#include "server/core/party_inbox.h"
#include "server/core/released_fidelity_file.h"

namespace vfsynth {
namespace {

// What the privacy statement and the released report are named after: the CSV, or for a
// table published to PostgreSQL alone, that table's name in checkpoint_dir.
std::string PublishedTablePath(const v1::CuratorConfig& config) {
  if (!config.output().synthetic_csv().empty()) return config.output().synthetic_csv();
  return (std::filesystem::path(config.checkpoint_dir()) /
          absl::StrCat(config.output().postgres().table(), ".table"))
      .string();
}

std::vector<std::string> Roster(const v1::CuratorConfig& config) {
  return {config.parties().begin(), config.parties().end()};
}

}  // namespace

CuratorCore::CuratorCore(v1::CuratorConfig config, std::unique_ptr<CuratorProtocol> protocol,
                         std::string run_nonce, bool resume)
    : config_(std::move(config)),
      roster_(Roster(config_)),
      registry_(roster_.size()),
      hub_(roster_),
      status_(config_),
      checkpoints_(config_, std::move(run_nonce)),
      // Resuming, the parties only have to come back, not to be started.
      join_(absl::Seconds(resume ? config_.reconnect_timeout_seconds()
                                 : config_.join_timeout_seconds())),
      run_{config_, roster_, registry_, hub_, profile_, status_, checkpoints_, join_, resume},
      protocol_(std::move(protocol)) {
  attested_.assign(roster_.size(), false);
  statements_.assign(roster_.size(), "");
  protocol_->Bind(&run_);
}

// A checkpoint job may still read the protocol's state.
CuratorCore::~CuratorCore() { checkpoints_.Await().IgnoreError(); }

absl::StatusOr<int> CuratorCore::RosterIndex(const std::string& party,
                                             const std::string& run_id) const {
  const int index = hub_.Index(party);
  if (index < 0)
    return absl::PermissionDeniedError(absl::StrCat("'", party, "' is not in the roster"));
  if (run_id != config_.run_id()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run id '", run_id, "' does not match this run '", config_.run_id(), "'"));
  }
  return index;
}

absl::StatusOr<v1::RegisterResponse> CuratorCore::Register(const std::string& party,
                                                           const v1::RegisterRequest& request) {
  const int index = hub_.Index(party);
  if (index < 0)
    return absl::PermissionDeniedError(absl::StrCat("'", party, "' is not in the roster"));
  if (request.protocol_version() != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrCat("party speaks protocol version ",
                                                      request.protocol_version(),
                                                      ", this curator speaks ", kProtocolVersion));
  }
  if (request.topology() != config_.topology()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", party, "' is configured for topology '", v1::Topology_Name(request.topology()),
        "' but this run is '", v1::Topology_Name(config_.topology()), "'"));
  }
  if (request.privacy().mode() != config_.privacy().mode()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", party, "' declares privacy mode '", privacy::ModeName(request.privacy().mode()),
        "' but this run uses '", privacy::ModeName(config_.privacy().mode()), "'"));
  }
  const double share = config_.privacy().experimental().shared_critic_budget_share();
  if (request.privacy().shared_critic_budget_share() != share) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", party, "' splits each step's privacy with shared_critic_budget_share ",
        request.privacy().shared_critic_budget_share(), " but this run uses ", share,
        " (the joint epsilon assumes one split: set "
        "privacy.experimental.shared_critic_budget_share alike)"));
  }
  // Bounded before anything is built from the schema: one party must not be able to
  // exhaust the curator's memory.
  const std::string source = absl::StrCat("schema of '", party, "'");
  const v1::RegistrationLimits& limits = config_.registration_limits();
  RETURN_IF_ERROR(CheckSchemaWithinLimits(request.schema(), limits, source));
  auto encoder = TableEncoder::Create(request.schema());
  if (!encoder.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", encoder.status().message()));
  }
  RETURN_IF_ERROR(CheckEncodedWidthWithinLimits(encoder->width(), limits, source));
  {
    // One registration at a time: the protocol's checks see every earlier one.
    absl::MutexLock lock(&mu_);
    if (!cancelled_.ok()) return cancelled_;
    RETURN_IF_ERROR(protocol_->Admit(index, request));
    const std::optional<v1::RegisterRequest> existing = registry_.Get(index);
    if (existing.has_value()) {
      if (existing->schema().SerializeAsString() != request.schema().SerializeAsString()) {
        return absl::FailedPreconditionError(
            absl::StrCat("party '", party, "' registered again with a different schema"));
      }
    } else {
      const int64_t width = encoder->width();
      registry_.Add(index, request, std::make_unique<TableEncoder>(std::move(*encoder)));
      spdlog::info("party {} registered: {} columns, {} encoded, {} records", party,
                   request.schema().columns_size(), width, request.rows());
      join_.Progress();
    }
  }
  v1::RegisterResponse response;
  response.set_run_id(config_.run_id());
  response.set_run_nonce(checkpoints_.run_nonce());
  response.set_protocol_version(kProtocolVersion);
  *response.mutable_model() = config_.model();
  *response.mutable_training() = config_.training();
  for (const std::string& name : roster_) response.add_parties(name);
  response.set_topology(config_.topology());
  protocol_->DescribeRun(&response);
  return response;
}

absl::StatusOr<v1::AlignResponse> CuratorCore::Align(const std::string& party,
                                                     const v1::AlignRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  {
    absl::MutexLock lock(&mu_);
    if (!cancelled_.ok()) return cancelled_;
  }
  const std::optional<v1::RegisterRequest> registration = registry_.Get(index);
  if (!registration.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("party '", party, "' must Register before Align"));
  }
  RETURN_IF_ERROR(protocol_->CheckAlign(index, request, *registration));
  status_.Advance(v1::waiting, v1::aligning);
  ASSIGN_OR_RETURN(v1::AlignResponse response, protocol_->Align(index, request));
  if (!response.has_aligned()) return response;
  absl::MutexLock lock(&mu_);
  if (!records_.has_value()) AcceptRecords(response.aligned().records());
  if (!records_->ok()) return records_->status();
  return response;
}

void CuratorCore::AcceptRecords(int64_t records) {
  if (absl::Status accepted = protocol_->AcceptRecords(records); !accepted.ok()) {
    records_ = accepted;
    return;
  }
  status_.SetAlignedRecords(records);
  records_ = records;
}

absl::StatusOr<v1::ShareLabelsResponse> CuratorCore::ShareLabels(
    const std::string& party, const v1::ShareLabelsRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  return protocol_->ShareLabels(index, request);
}

absl::StatusOr<v1::LabelPairsResponse> CuratorCore::ReleaseLabelPairs(
    const std::string& party, const v1::LabelPairsRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  RETURN_IF_ERROR(protocol_->ReleaseLabelPairs(index, request));
  return v1::LabelPairsResponse();
}

absl::StatusOr<v1::MarginalsResponse> CuratorCore::ReleaseMarginals(
    const std::string& party, const v1::MarginalsRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  RETURN_IF_ERROR(protocol_->ReleaseMarginals(index, request));
  return v1::MarginalsResponse();
}

absl::StatusOr<int64_t> CuratorCore::AwaitRecords() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !cancelled_.ok() || records_.has_value();
  };
  join_.Await(&mu_, absl::Condition(&ready));
  if (!cancelled_.ok()) return cancelled_;
  if (!records_.has_value()) return absl::DeadlineExceededError(protocol_->DescribeWaiting());
  return *records_;
}

absl::Status CuratorCore::PlanPrivacy(int64_t records) {
  status_.SetPhase(v1::planning);
  absl::StatusOr<v1::PrivacyPlan> plan = protocol_->Plan(records);
  if (plan.ok()) {
    if (absl::Status budgets = CheckPlanBudgets(*plan); !budgets.ok()) plan = budgets;
  }
  {
    absl::MutexLock lock(&mu_);
    plan_ = plan;
  }
  if (!plan.ok()) return plan.status();
  privacy_plan_ = *plan;
  status_.SetPlan(*plan);
  protocol_->LogPlan(*plan, PlanDigest(*plan));
  const privacy::Mode mode = config_.privacy().mode();
  for (const v1::ObserverGuarantee& guarantee : plan->guarantees()) {
    spdlog::info("privacy {}: against {}", privacy::ModeName(mode),
                 DescribeGuarantee(guarantee, config_.privacy().delta()));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::AttestPlanResponse> CuratorCore::AttestPlan(
    const std::string& party, const v1::AttestPlanRequest& request) {
  ASSIGN_OR_RETURN(const int index, RosterIndex(party, request.run_id()));
  if (!request.refusal().empty()) {
    return FailRun(absl::FailedPreconditionError(
        absl::StrCat("party '", party, "' refuses the run: ", request.refusal())));
  }
  absl::Status same;
  v1::AttestPlanResponse response;
  {
    absl::MutexLock lock(&mu_);
    auto planned = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return !cancelled_.ok() || plan_.has_value();
    };
    if (!join_.Await(&mu_, absl::Condition(&planned))) {
      return absl::DeadlineExceededError(
          "the curator had not planned the run's privacy before the join timeout");
    }
    if (!cancelled_.ok()) return cancelled_;
    if (!plan_->ok()) return plan_->status();
    same =
        CheckSamePlan(**plan_, "the curator", request.plan(), absl::StrCat("party '", party, "'"));
    if (same.ok()) {
      if (!attested_[index]) {
        spdlog::info("party {} attested the privacy plan", party);
        join_.Progress();
      }
      attested_[index] = true;
      statements_[index] = request.statement();
      // Answer once every party's plan matched: a party answered earlier would charge its
      // ledger for a run that another party's plan then fails.
      auto all_attested = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !cancelled_.ok() ||
               std::all_of(attested_.begin(), attested_.end(), [](bool a) { return a; });
      };
      if (!join_.Await(&mu_, absl::Condition(&all_attested))) {
        return absl::DeadlineExceededError(
            "not every party attested the privacy plan before the join timeout");
      }
      if (!cancelled_.ok()) return cancelled_;
      *response.mutable_plan() = **plan_;
      for (size_t k = 0; k < roster_.size(); ++k) {
        v1::PartyStatement* statement = response.add_statements();
        statement->set_party(roster_[k]);
        statement->set_statement(statements_[k]);
      }
      return response;
    }
  }
  // The run cannot go on: its joint epsilon would not hold.
  return FailRun(same);
}

absl::Status CuratorCore::FailRun(absl::Status reason) {
  spdlog::error("{}", std::string(reason.message()));
  Cancel(reason);
  return reason;
}

absl::Status CuratorCore::CheckAttested(const std::string& party) const {
  const int index = hub_.Index(party);
  absl::MutexLock lock(&mu_);
  if (index < 0 || !attested_[index]) {
    return absl::FailedPreconditionError(
        absl::StrCat("party '", party,
                     "' opened Train before its privacy plan matched the curator's (AttestPlan)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CuratorCore::StartFromCheckpoint() {
  const std::vector<v1::Schema> schemas = registry_.Schemas();
  checkpoints_.Bind(CuratorDataDigest(records_aligned_, schemas),
                    MakeGeneratorHeader(config_, schemas, PublishedRows(), privacy_plan_));
  if (!run_.resume) {
    ASSIGN_OR_RETURN(const SavedState state, protocol_->Save());
    RETURN_IF_ERROR(checkpoints_.WriteFirst(state));
    return 0;
  }
  ASSIGN_OR_RETURN(const RunCheckpoints::Restored restored,
                   checkpoints_.Read(privacy_plan_.rounds()));
  RETURN_IF_ERROR(protocol_->Restore(restored.payload));
  return restored.round;
}

absl::Status CuratorCore::Train() {
  RETURN_IF_ERROR(protocol_->Prepare(privacy_plan_));
  ASSIGN_OR_RETURN(const int64_t first_round, StartFromCheckpoint());
  status_.SetPhase(v1::training);
  status_.StartRounds(first_round);
  RETURN_IF_ERROR(protocol_->Train(first_round));
  return checkpoints_.Await();  // the last round's checkpoint is on disk before the run ends
}

absl::Status CuratorCore::Run() {
  absl::StatusOr<int64_t> records = AwaitRecords();
  absl::Status status = records.status();
  if (status.ok()) {
    records_aligned_ = *records;
    status = PlanPrivacy(*records);
  }
  if (status.ok()) {
    status = join_.Until([this](absl::Time deadline) { return hub_.WaitAllConnected(deadline); });
  }
  if (status.ok()) status = CatchLibTorch([this] { return Train(); });
  SendFinished(status);
  if (!status.ok()) {
    checkpoints_.WriteAtShutdown();
    status_.Fail(status);
    return status;
  }
  status = Publish();
  if (!status.ok()) {
    // Parties read the status: the output's paths and database stay in this daemon's log.
    status_.Fail(absl::Status(status.code(),
                              "publication failed after training (the curator's log says why)"));
    return status;
  }
  status_.SetPhase(v1::finished);
  return absl::OkStatus();
}

void CuratorCore::SendFinished(const absl::Status& outcome) {
  // A cancelled run has ended the streams already (the parties redial and can join a resumed run).
  for (size_t k = 0; k < roster_.size() && !hub_.cancelled(); ++k) {
    v1::CuratorMessage message = RunEnvelope(
        run_, privacy_plan_.rounds() > 0 ? privacy_plan_.rounds() : config_.training().rounds(),
        -1);
    message.mutable_finished()->set_message(outcome.ok() ? "training finished"
                                                         : outcome.ToString());
    message.mutable_finished()->set_succeeded(outcome.ok());
    hub_.Send(static_cast<int>(k), std::move(message));
  }
  hub_.CloseAll();
}

absl::Status CuratorCore::Publish() {
  const v1::OutputConfig& output = config_.output();
  if (output.synthetic_csv().empty() && !output.has_postgres()) return absl::OkStatus();
  status_.SetPhase(v1::publishing);
  const int64_t rows = PublishedRows();
  // One intra-op thread, as `vfsynth synthesize` redraws it from the artefact: a
  // reduction split over threads changes last bits, and with them a rounded value.
  absl::StatusOr<CsvTable> table = [&] {
    ScopedIntraOpThreads one_thread(1);
    return Synthesize(rows);
  }();
  RETURN_IF_ERROR(table.status());
  // The budget is spent by now; the generator artefact holds what it bought.
  const auto recoverable = [&](const absl::Status& status) {
    if (status.ok()) return status;
    return absl::Status(
        status.code(),
        absl::StrCat(status.message(), "; the trained generator is saved: `vfsynth synthesize ",
                     "--generator ", GeneratorArtefactPath(config_),
                     " --output FILE` draws the table again at no privacy cost"));
  };
  if (!output.synthetic_csv().empty()) {
    RETURN_IF_ERROR(recoverable(WriteCsv(output.synthetic_csv(), *table)));
    spdlog::info("published {} synthetic rows to {}", rows, output.synthetic_csv());
  }
  if (output.has_postgres()) {
    RETURN_IF_ERROR(recoverable(WritePostgresTable(
        output.postgres(), *table, PostgresColumnsFor(table->header, registry_.Schemas()))));
    spdlog::info("published {} synthetic rows to postgres:{}", rows, output.postgres().table());
  }
  const std::string path = PublishedTablePath(config_);
  RETURN_IF_ERROR(recoverable(WritePrivacyStatement(path, privacy_plan_)));
  ASSIGN_OR_RETURN(const std::optional<v1::ReleasedFidelity> report,
                   protocol_->ReleasedReport(*table, privacy_plan_));
  if (report.has_value()) RETURN_IF_ERROR(recoverable(WriteReleasedFidelity(*report, path)));
  spdlog::info("wrote its privacy statement {}", PrivacyStatementPath(path));
  return absl::OkStatus();
}

int64_t CuratorCore::PublishedRows() const {
  if (config_.output().rows() > 0) return config_.output().rows();
  return protocol_->DefaultPublishedRows(privacy_plan_);
}

void CuratorCore::Cancel(absl::Status reason) {
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_.ok()) cancelled_ = reason;
  }
  protocol_->Cancel(reason);
  hub_.Cancel(std::move(reason));
}

std::optional<v1::PrivacyPlan> CuratorCore::Plan() const {
  absl::MutexLock lock(&mu_);
  if (!plan_.has_value() || !plan_->ok()) return std::nullopt;
  return **plan_;
}

v1::StatusResponse CuratorCore::Status() const {
  std::optional<double> party_epsilon_spent;
  v1::StatusResponse status = status_.Snapshot(&party_epsilon_spent);
  for (size_t k = 0; k < roster_.size(); ++k) {
    const int index = static_cast<int>(k);
    v1::PartyStatus* party = status.add_parties();
    party->set_name(roster_[k]);
    party->set_registered(registry_.registered(index));
    party->set_aligned(protocol_->aligned(index));
    party->set_connected(hub_.connected(index));
    const absl::Time last = hub_.last_message(index);
    party->set_seconds_since_last_message(
        last == absl::InfinitePast() ? -1 : absl::ToDoubleSeconds(absl::Now() - last));
    if (party_epsilon_spent.has_value()) party->set_epsilon_spent(*party_epsilon_spent);
    party->set_bytes_sent(hub_.bytes_sent(index));
    party->set_bytes_received(hub_.bytes_received(index));
  }
  return status;
}

absl::StatusOr<CsvTable> CuratorCore::Synthesize(int64_t rows) {
  RETURN_IF_ERROR(CheckSynthesisRows(rows));
  return CatchLibTorch<CsvTable>([&] { return protocol_->Sample(rows); });
}

}  // namespace vfsynth
