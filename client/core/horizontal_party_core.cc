#include "client/core/horizontal_party_core.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "client/core/ledger_binding.h"
#include "client/core/party_ledger.h"
#include "client/core/party_table.h"
#include "common/base/file_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/alignment.h"
#include "common/federated/wae_table.h"
#include "common/nn/wae.h"
#include "common/nn/wire_tensor.h"
#include "common/privacy/privacy_plan.h"
#include "common/protocol/protocol_version.h"
#include "common/protocol/tensor_codec.h"
#include "common/random/secure_random.h"

namespace vfsynth {
namespace {

std::string SecretPath(const v1::PartyConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "party.secret").string();
}

std::string BindingPath(const v1::PartyConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "ledger.binding").string();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HorizontalPartyCore>> HorizontalPartyCore::Create(
    const v1::PartyConfig& config, bool resume) {
  if (config.topology() != v1::Topology::horizontal) {
    return absl::InvalidArgumentError("a horizontal party needs topology 'horizontal'");
  }
  if (!resume && std::filesystem::exists(SecretPath(config))) {
    return absl::FailedPreconditionError(
        absl::StrCat("a run's state already exists at ", SecretPath(config),
                     ": pass --resume to continue that run, ", "or remove ",
                     config.checkpoint_dir(), " (or set checkpoint_dir) to start over"));
  }
  // One grid for every party (from the schema's bounds alone): their encodings must agree.
  ASSIGN_OR_RETURN(PartyData data, LoadPartyTable(config, /*grid_records=*/0));
  if (data.encoded.rows == 0)
    return absl::InvalidArgumentError(absl::StrCat(PartyTableName(config), " has no rows"));
  // The horizontal parties share no secrets: their statements attest the plan alone.
  ASSIGN_OR_RETURN(ListIdentity identity, LoadListIdentity(config.tls()));
  std::unique_ptr<HorizontalPartyCore> core(new HorizontalPartyCore(
      config, std::move(data), PlanAttestation(config.name(), std::move(identity), std::nullopt),
      resume));
  return core;
}

HorizontalPartyCore::HorizontalPartyCore(v1::PartyConfig config, PartyData data,
                                         PlanAttestation attestation, bool resume)
    : config_(std::move(config)),
      resume_(resume),
      data_(std::move(data)),
      attestation_(std::move(attestation)) {
  users_ = GroupByUser(WaeInputs(data_.encoded, data_.encoder.blocks()), data_.users, data_.ids);
  // The users hold their own rows now: the encoded table and the per-row names are not
  // read again (a million users' copies would double the party's memory).
  std::vector<float>().swap(data_.encoded.values);
  std::vector<std::string>().swap(data_.ids);
  std::vector<std::string>().swap(data_.users);
}

v1::RegisterRequest HorizontalPartyCore::MakeRegisterRequest() const {
  v1::RegisterRequest request;
  request.set_party(config_.name());
  request.set_protocol_version(kProtocolVersion);
  request.set_topology(v1::Topology::horizontal);
  *request.mutable_schema() = data_.encoder.schema();
  request.mutable_schema()->clear_id_column();
  request.mutable_schema()->clear_user_column();
  request.set_rows(data_.encoded.rows);
  request.set_users(users());
  request.mutable_privacy()->set_mode(config_.privacy().mode());
  request.mutable_privacy()->set_epsilon_budget(config_.privacy().epsilon());
  return request;
}

absl::Status HorizontalPartyCore::AcceptRegistration(const v1::RegisterResponse& response) {
  RETURN_IF_ERROR(CheckRegisterResponse(response, v1::Topology::horizontal));
  v1::HorizontalConfig horizontal = response.horizontal();
  if (const absl::Status status = ResolveHorizontalConfig(&horizontal, config_.privacy().mode());
      !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("curator's run settings: ", status.message()));
  }
  Sha256Builder settings;
  settings.Add(horizontal.SerializeAsString()).Add(response.training().SerializeAsString());
  for (const std::string& party : response.parties()) settings.Add(party);
  ASSIGN_OR_RETURN(const bool joined, JoinRun(response, settings.Hex(), config_, resume_, &run()));
  if (!joined) return absl::OkStatus();  // a reconnect to the same run
  parties_ = response.parties_size();
  roster_.assign(response.parties().begin(), response.parties().end());
  horizontal_ = horizontal;
  training_ = response.training();
  return absl::OkStatus();
}

absl::StatusOr<v1::AlignRequest> HorizontalPartyCore::MakeAlignRequest() {
  if (run().id().empty()) return absl::FailedPreconditionError("Align before Register");
  v1::AlignRequest request;
  request.set_run_id(run().id());
  request.set_party(config_.name());
  return request;
}

absl::StatusOr<std::optional<v1::AlignRequest>> HorizontalPartyCore::AnswerAlign(
    const v1::AlignResponse& response) {
  if (!response.has_aligned() || response.aligned().positions_size() > 0) {
    return absl::InvalidArgumentError("the curator answered the horizontal join with a PSI hop");
  }
  const int64_t users = response.aligned().records();
  if (run().aligned()) {  // a reconnect: the run's users are the same
    if (users != plan_.records()) {
      return absl::FailedPreconditionError(absl::StrCat("after reconnecting, the run has ", users,
                                                        " users instead of ", plan_.records()));
    }
    return std::nullopt;
  }
  RETURN_IF_ERROR(PlanPrivacy(users));
  RETURN_IF_ERROR(attestation_.State(run().id(), run().nonce(), plan_));
  run().set_aligned();
  return std::nullopt;
}

absl::Status HorizontalPartyCore::PlanPrivacy(int64_t users) {
  if (users < this->users()) {
    return absl::InvalidArgumentError(absl::StrCat("the curator counts ", users,
                                                   " users in the run, fewer than this party's ",
                                                   this->users()));
  }
  ASSIGN_OR_RETURN(
      plan_, ResolveHorizontalPlan(config_.privacy(), horizontal_, training_, parties_, users));
  RETURN_IF_ERROR(CheckPlanBudgets(plan_));
  options_.architecture =
      WaeOptions{data_.encoder.width(), horizontal_.hidden(), horizontal_.latent()};
  options_.local = LocalUpdateOf(horizontal_, plan_.privacy().mode());
  parameters_ = WaeParameterCount(options_.architecture);
  if (plan_.privacy().mode() == v1::PrivacyConfig::dpfedavg) {
    options_.dp_fedavg = DpFedAvgOptions{DpFedAvgMechanism(plan_).sample_rate,
                                         plan_.privacy().clip_norm(), plan_.noise_multiplier()};
    spdlog::info(
        "privacy dpfedavg: epsilon {:.4g} at delta {} per user against everyone; {} rounds, each "
        "user drawn at rate "
        "{:.4g}, its update clipped to {}, this party's sum noised at multiplier {:.4f}",
        Guarantee(plan_, Observer::kPublished).epsilon_planned(), plan_.privacy().delta(),
        plan_.rounds(), options_.dp_fedavg->sample_rate, options_.dp_fedavg->clip_norm,
        options_.dp_fedavg->noise_multiplier);
    return absl::OkStatus();
  }
  options_.top_k_ratio = horizontal_.top_k_ratio();
  options_.epsilon_per_round = EpsilonPerAnswer(plan_);
  spdlog::info(
      "privacy signds: epsilon {} per user ({} answer(s) at most, {:.4g} each) against everyone; "
      "{} rounds",
      plan_.privacy().epsilon(), horizontal_.participation_cap(), options_.epsilon_per_round,
      plan_.rounds());
  return absl::OkStatus();
}

v1::AttestPlanRequest HorizontalPartyCore::MakeAttestPlanRequest() const {
  return AttestPlanRequestOf(run().id(), config_.name(), plan_, attestation_.statement());
}

v1::AttestPlanRequest HorizontalPartyCore::MakeRefusal(const absl::Status& reason) const {
  return RefusalOf(run().id(), config_.name(), reason);
}

absl::Status HorizontalPartyCore::AcceptCuratorPlan(const v1::AttestPlanResponse& response) {
  if (!run().aligned()) return absl::FailedPreconditionError("privacy plan before the join");
  RETURN_IF_ERROR(CheckAttestedPlan(config_.name(), plan_, attestation_, roster_, response));
  if (run().plan_attested()) return absl::OkStatus();
  // The secret is kept before the first answer: without it this party answered nothing.
  if (party_secret_.empty() && resume_ && !std::filesystem::exists(SecretPath(config_))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--resume: this party stopped before the privacy plans of run '", run().id(),
        "' matched, so it answered nothing and there is nothing to resume: start it without "
        "--resume"));
  }
  if (party_secret_.empty()) {
    ASSIGN_OR_RETURN(party_secret_,
                     ResumeOrNewHexSecret(resume_, SecretPath(config_),
                                          "it holds the secret this party's answers derive from"));
  }
  RETURN_IF_ERROR(OpenLedger());
  if (!resume_) {
    // The binding first: a kept secret always has its ledger's binding next to it.
    RETURN_IF_ERROR(MakeDirectories(config_.checkpoint_dir()));
    RETURN_IF_ERROR(KeepBinding());
    RETURN_IF_ERROR(WritePrivateFile(SecretPath(config_), party_secret_));
  }
  // The ledger holds keyed digests of the users, never their names.
  std::vector<std::string> keys;
  for (const std::string& name : users_.names) keys.push_back(AlignmentToken(party_secret_, name));
  party_ =
      std::make_unique<HorizontalParty>(users_.rows, std::move(keys), ledger_.get(), party_secret_);
  run().set_plan_attested();
  started_ = absl::Now();
  spdlog::info(
      "the curator's privacy plan matches this party's ({}); {} users over {} rows, {} before",
      PlanDigest(plan_).substr(0, 16), users(), data_.encoded.rows,
      dp_fedavg() ? absl::StrCat(privacy_ledger_->charges(), " rounds charged")
                  : absl::StrCat(ledger_->users(), " of them answered"));
  return absl::OkStatus();
}

absl::Status HorizontalPartyCore::OpenLedger() {
  if (dp_fedavg()) {
    ASSIGN_OR_RETURN(privacy_ledger_,
                     OpenPartyLedger(config_.privacy(), run().id(), privacy::Sampler::kPoisson,
                                     privacy::Conversion::kImproved,
                                     {{DpFedAvgMechanism(plan_), plan_.rounds()}}, resume_));
    return CheckKeptBinding();
  }
  const privacy::ParticipationConfig participation = {run().id(), horizontal_.participation_cap(),
                                                      EpsilonPerAnswer(plan_)};
  // Resuming, a new ledger would put the users back under their caps.
  absl::StatusOr<std::unique_ptr<privacy::ParticipationLedger>> ledger =
      resume_
          ? privacy::ParticipationLedger::OpenExisting(config_.privacy().ledger(), participation)
          : privacy::ParticipationLedger::Open(config_.privacy().ledger(), participation);
  if (!ledger.ok()) return MissingLedgerOnResume(ledger.status());
  ledger_ = *std::move(ledger);
  // The ledger knows users by a digest keyed with the secret: under a new secret the same
  // users would look new to it and answer past their caps.
  // Its bound rounds would refuse the new start's questions too.
  if (!resume_ && ledger_->records() > 0) {
    const int64_t charged = ledger_->users();
    ledger_.reset();
    return absl::FailedPreconditionError(absl::StrCat(
        "participation ledger ", config_.privacy().ledger(),
        " already holds rounds and answers of ", charged, " users of run '", run().id(),
        "': pass --resume with the run's checkpoint_dir (its secret names those "
        "users), or start another run"));
  }
  return CheckKeptBinding();
}

LedgerBinding HorizontalPartyCore::CurrentBinding() const {
  const std::string secret = Sha256Builder().Add("vfsynth party secret").Add(party_secret_).Hex();
  if (dp_fedavg()) {
    return {privacy_ledger_->id(), privacy_ledger_->charges() + privacy_ledger_->releases(),
            secret};
  }
  return {ledger_->id(), ledger_->records(), secret};
}

absl::Status HorizontalPartyCore::KeepBinding() const {
  return KeepLedgerBinding(BindingPath(config_), CurrentBinding());
}

absl::Status HorizontalPartyCore::CheckKeptBinding() const {
  if (!resume_) return absl::OkStatus();
  absl::StatusOr<LedgerBinding> kept = ReadLedgerBinding(BindingPath(config_));
  if (absl::IsNotFound(kept.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("--resume: ", kept.status().message(),
                     ": this party's state does not name the ledger its answers were recorded on"));
  }
  if (!kept.ok()) return kept.status();
  return CheckLedgerBinding(*kept, absl::StrCat("the party state ", BindingPath(config_)),
                            CurrentBinding(),
                            absl::StrCat(dp_fedavg() ? "privacy ledger " : "participation ledger ",
                                         config_.privacy().ledger()),
                            "records");
}

v1::PartyMessage HorizontalPartyCore::MakeHello() const {
  return HelloOf(run().id(), config_.name(), -1);
}

double HorizontalPartyCore::epsilon_spent() const {
  if (privacy_ledger_ != nullptr) return privacy_ledger_->Spent().epsilon;
  return ledger_ == nullptr ? 0.0 : ledger_->max_epsilon_spent();
}

absl::Status HorizontalPartyCore::Finish(const v1::Finished& /*finished*/) {
  if (dp_fedavg()) {
    spdlog::info("the run ended: {} rounds charged, epsilon {:.4g} per user at delta {}",
                 privacy_ledger_->charges(), privacy_ledger_->Spent().epsilon,
                 plan_.privacy().delta());
  } else {
    spdlog::info("the run ended: {} users of this party answered, epsilon {:.4g} at most per user",
                 ledger_->users(), ledger_->max_epsilon_spent());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::PartyMessage>> HorizontalPartyCore::HandleRound(
    const v1::CuratorMessage& message) {
  const int64_t round = message.round();
  const v1::HorizontalTask& task = message.horizontal_task();
  if (round < 0 || round >= plan_.rounds()) {
    return absl::InvalidArgumentError(
        absl::StrCat("round ", round, " is outside the run's ", plan_.rounds()));
  }
  if (task.users() < 0 || task.users() > horizontal_.users_per_round()) {
    return absl::InvalidArgumentError(absl::StrCat("the curator asks for ", task.users(),
                                                   " users, outside [0, ",
                                                   horizontal_.users_per_round(), "]"));
  }
  RETURN_IF_ERROR(ValidateTensor(task.model(), {parameters_}, "horizontal_task.model",
                                 config_.max_message_bytes()));
  const torch::Tensor global = FromWire(task.model());
  if (!torch::isfinite(global).all().item<bool>()) {
    return absl::InvalidArgumentError("the broadcast model has a value that is not finite");
  }
  v1::PartyMessage reply;
  reply.set_run_id(run().id());
  reply.set_round(round);
  reply.set_step(-1);
  const bool log =
      (round + 1) % std::max(1, training_.log_every()) == 0 || round + 1 == plan_.rounds();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - started_);
  if (dp_fedavg()) {
    RETURN_IF_ERROR(AnswerWithSum(round, global, &reply));
    RETURN_IF_ERROR(KeepBinding());
    if (log) {
      spdlog::info("round {}/{}: {:.2f} rounds/s here, epsilon {:.4g} per user spent", round + 1,
                   plan_.rounds(), privacy_ledger_->charges() / std::max(seconds, 1e-9),
                   privacy_ledger_->Spent().epsilon);
    }
    return std::vector<v1::PartyMessage>{std::move(reply)};
  }
  ASSIGN_OR_RETURN(const std::vector<SignDsReport> reports,
                   party_->Answer(round, global, task.users(), options_));
  RETURN_IF_ERROR(KeepBinding());
  v1::SignDsReports* out = reply.mutable_sign_ds_reports();
  for (const SignDsReport& report : reports) {
    out->add_indices(report.index);
    out->add_positive(report.positive);
  }
  answered_ += static_cast<int64_t>(reports.size());
  if (log) {
    spdlog::info(
        "round {}/{}: {} users answered here ({:.2f} users/s), {} of {} have spent epsilon, at "
        "most {:.4g}",
        round + 1, plan_.rounds(), answered_, answered_ / std::max(seconds, 1e-9), ledger_->users(),
        users(), ledger_->max_epsilon_spent());
  }
  return std::vector<v1::PartyMessage>{std::move(reply)};
}

absl::Status HorizontalPartyCore::AnswerWithSum(int64_t round, const torch::Tensor& global,
                                                v1::PartyMessage* reply) {
  // Charged before anything computed from the round's draw exists: a crash after the
  // charge over-counts, never under-counts, and the round asked again charges nothing.
  RETURN_IF_ERROR(privacy_ledger_->Charge(round, DpFedAvgMechanism(plan_)));
  ASSIGN_OR_RETURN(const torch::Tensor sum, party_->AnswerSum(round, global, options_));
  ToWire(sum, reply->mutable_update_sum()->mutable_sum());
  // The charge covers this sum only: a different one for the round is refused.
  return privacy_ledger_->RecordRelease(round, absl::StrCat("update_sum_", round),
                                        Sha256Hex(reply->update_sum().sum().SerializeAsString()));
}

}  // namespace vfsynth
