#include "client/core/vertical_party_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/core/alignment_secret.h"
#include "client/core/kept_release.h"
#include "client/core/label_pair_release.h"
#include "client/core/ledger_binding.h"
#include "client/core/party_durability.h"
#include "client/core/party_ledger.h"
#include "client/core/party_table.h"
#include "client/core/record_alignment.h"
#include "client/core/reply_journal.h"
#include "common/base/file_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/checkpoint_file.h"
#include "common/checkpoint/checkpoint_slots.h"
#include "common/checkpoint/model_state.h"
#include "common/config/config.h"
#include "common/data/alignment.h"
#include "common/data/schema.h"
#include "common/dp/dp_sgd.h"
#include "common/gan/party_model.h"
#include "common/nn/networks.h"
#include "common/nn/torch_boundary.h"
#include "common/nn/wire_tensor.h"
#include "common/privacy/ledger.h"
#include "common/privacy/mode_traits.h"
#include "common/privacy/noise_figure.h"
#include "common/privacy/privacy_plan.h"
#include "common/privacy/run_accounting.h"
#include "common/protocol/protocol_version.h"
#include "common/protocol/tensor_codec.h"
#include "common/random/secure_random.h"

namespace vfsynth {

// The marginal release's name in the ledger: its draw is kept in the party's checkpoint.
constexpr char kMarginalReleaseName[] = "marginals";

absl::StatusOr<PartySecrets> LoadPartySecrets(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  if (const auto warning = ReadableByOthersWarning(path)) spdlog::warn("{}", *warning);
  PartySecrets secrets;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.first == "sampling_secret") {
      secrets.sampling_secret = kv.second;
    } else if (kv.first == "alignment_key") {
      secrets.alignment_key = kv.second;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(path, ": unknown key '", kv.first, "'"));
    }
  }
  // Used as written (never decoded): `openssl rand -hex 32` gives 64 characters.
  if (secrets.sampling_secret.size() < kMinSecretBytes ||
      secrets.alignment_key.size() < kMinSecretBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": needs sampling_secret and alignment_key of at least ",
                     kMinSecretBytes, " bytes each (e.g. openssl rand -hex 32)"));
  }
  return secrets;
}

VerticalPartyCore::VerticalPartyCore(v1::PartyConfig config, PartySecrets secrets, PartyData data,
                                     PlanAttestation attestation, bool resume)
    : config_(std::move(config)),
      secrets_(std::move(secrets)),
      data_(std::move(data)),
      attestation_(std::move(attestation)),
      resume_(resume),
      mode_(config_.privacy().mode()) {}

VerticalPartyCore::~VerticalPartyCore() = default;

absl::StatusOr<std::unique_ptr<VerticalPartyCore>> VerticalPartyCore::Create(
    const v1::PartyConfig& config, bool resume) {
  ASSIGN_OR_RETURN(PartySecrets secrets, LoadPartySecrets(config.secrets()));
  ASSIGN_OR_RETURN(PartyData data, LoadPartyTable(config));
  ASSIGN_OR_RETURN(ListIdentity identity, LoadListIdentity(config.tls()));
  PlanAttestation attestation(config.name(), std::move(identity),
                              SharedSecrets{secrets.sampling_secret, secrets.alignment_key});
  std::unique_ptr<VerticalPartyCore> core(new VerticalPartyCore(
      config, std::move(secrets), std::move(data), std::move(attestation), resume));
  ASSIGN_OR_RETURN(std::vector<std::string> tokens,
                   AlignmentTokens(core->secrets_.alignment_key, core->data_.ids));
  core->alignment_ =
      std::make_unique<RecordAlignment>(config.name(), core->data_.ids, std::move(tokens),
                                        core->secrets_.alignment_key, AnsweredHopsPath(config));
  return core;
}

v1::RegisterRequest VerticalPartyCore::MakeRegisterRequest() const {
  return VerticalRegisterRequest(config_, data_.encoder.schema(), data_.encoded.rows);
}

absl::Status VerticalPartyCore::AcceptRegistration(const v1::RegisterResponse& response) {
  RETURN_IF_ERROR(CheckRegisterResponse(response, v1::Topology::vertical));
  v1::ModelConfig model = response.model();
  v1::TrainingConfig training = response.training();
  absl::Status status = ResolveModelConfig(&model);
  if (status.ok()) status = ResolveTrainingConfig(&training);
  if (!status.ok())
    return absl::InvalidArgumentError(absl::StrCat("curator's run settings: ", status.message()));
  Sha256Builder settings;
  settings.Add(model.SerializeAsString()).Add(training.SerializeAsString());
  for (const std::string& party : response.parties()) settings.Add(party);
  ASSIGN_OR_RETURN(const bool joined, JoinRun(response, settings.Hex(), config_, resume_, &run()));
  if (!joined) return absl::OkStatus();  // a reconnect to the same run
  parties_.assign(response.parties().begin(), response.parties().end());
  model_config_ = model;
  training_ = training;
  return absl::OkStatus();
}

absl::StatusOr<v1::AlignRequest> VerticalPartyCore::MakeAlignRequest() {
  RETURN_IF_ERROR(LoadOrDrawPartySecret());
  return alignment_->FirstRequest(run().id(), parties_, party_secret_);
}

absl::StatusOr<std::optional<v1::AlignRequest>> VerticalPartyCore::AnswerAlign(
    const v1::AlignResponse& response) {
  ASSIGN_OR_RETURN(std::optional<v1::AlignRequest> next, alignment_->Answer(response));
  if (next.has_value()) return next;
  RETURN_IF_ERROR(BuildFromAlignment(*alignment_->aligned()));
  return std::nullopt;
}

absl::Status VerticalPartyCore::AcceptAlignment(const v1::AlignedPositions& positions) {
  ASSIGN_OR_RETURN(const AlignedRows rows, alignment_->RowsOf(positions));
  RETURN_IF_ERROR(BuildFromAlignment(rows));  // nothing is kept from a refused answer
  return alignment_->AcceptPositions(positions);
}

absl::Status VerticalPartyCore::BuildFromAlignment(const AlignedRows& aligned) {
  // The rows are reordered and their encoded buffer released on the first call.
  if (model_ != nullptr) return absl::OkStatus();  // a reconnect: RecordAlignment checked them
  const size_t records = aligned.order.size();
  if (static_cast<int64_t>(records) < training_.batch_size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("only ", records, " aligned records for batch size ", training_.batch_size()));
  }
  ReorderRows(aligned.order, &data_);
  const int64_t width = data_.encoder.width();
  // The tensor takes the encoded buffer over rather than copying it: at a million rows
  // the table is the party's largest allocation.
  auto* values = new std::vector<float>(std::move(data_.encoded.values));
  data_.encoded.values = {};
  torch::Tensor table = torch::from_blob(
      values->data(), {data_.encoded.rows, width}, [values](void*) { delete values; },
      torch::TensorOptions().dtype(torch::kFloat32));
  data_digest_ = Sha256Builder()
                     .Add(aligned.digest)
                     .Add(absl::string_view(static_cast<const char*>(table.data_ptr()),
                                            table.numel() * table.element_size()))
                     .Hex();
  model_ = std::make_unique<PartyModel>(config_.name(), model_config_, training_,
                                        secrets_.sampling_secret, party_secret_, std::move(table));
  run().set_aligned();
  spdlog::info("aligned: {} of this party's records are held by every party", records);
  RETURN_IF_ERROR(PlanPrivacy());
  RETURN_IF_ERROR(attestation_.State(run().id(), run().nonce(), plan_));
  RETURN_IF_ERROR(PlanMarginals());
  return OpenCheckpoint();
}

v1::AttestPlanRequest VerticalPartyCore::MakeAttestPlanRequest() const {
  return AttestPlanRequestOf(run().id(), config_.name(), plan_, attestation_.statement());
}

v1::AttestPlanRequest VerticalPartyCore::MakeRefusal(const absl::Status& reason) const {
  return RefusalOf(run().id(), config_.name(), reason);
}

absl::Status VerticalPartyCore::AcceptCuratorPlan(const v1::AttestPlanResponse& response) {
  if (model_ == nullptr) return absl::FailedPreconditionError("privacy plan before alignment");
  RETURN_IF_ERROR(CheckAttestedPlan(config_.name(), plan_, attestation_, parties_, response));
  if (run().plan_attested()) return absl::OkStatus();
  spdlog::info("the curator's privacy plan matches this party's ({})",
               PlanDigest(plan_).substr(0, 16));
  run().set_plan_attested();
  // Charged only once the checkpoint is durable (AcceptAlignment): a charged ledger then
  // always has a checkpoint to resume from (PlanPrivacy refuses a fresh start on a
  // charged ledger).
  return ChargeMarginalRelease();
}

v1::CheckpointHeader VerticalPartyCore::CheckpointHeader(int64_t step) const {
  v1::CheckpointHeader header;
  header.set_kind(absl::StrCat("party:", config_.name()));
  header.set_run_id(run().id());
  header.set_run_nonce(run().nonce());
  // Led by party.secret's 256 random bits, the digest discloses nothing of either secret.
  header.set_secrets_digest(Sha256Builder()
                                .Add("vfsynth party secrets")
                                .Add(party_secret_)
                                .Add(secrets_.sampling_secret)
                                .Hex());
  header.set_step(step);
  header.set_config_digest(Sha256Builder()
                               .Add(run().settings_digest())
                               .Add(SettingsDigest(model_config_, training_, config_.privacy()))
                               .Hex());
  header.set_data_digest(data_digest_);
  if (ledger_ != nullptr) {
    header.set_ledger_id(ledger_->id());
    header.set_ledger_charges(ledger_->charges());
  }
  return header;
}

namespace {

std::string StatePath(const v1::PartyConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "state")
      .string();  // slots state.0, state.1
}

std::string JournalPath(const v1::PartyConfig& config) {
  return (std::filesystem::path(config.checkpoint_dir()) / "replies.journal").string();
}

absl::Status NoCheckpointToResume(const v1::PartyConfig& config) {
  return absl::FailedPreconditionError(
      absl::StrCat("--resume: there is no checkpoint at ", StatePath(config), ".{0,1}"));
}

}  // namespace

absl::Status VerticalPartyCore::LoadOrDrawPartySecret() {
  if (!party_secret_.empty()) return absl::OkStatus();
  if (!resume_) {
    ASSIGN_OR_RETURN(party_secret_,
                     KeptOrNewAlignmentSecret(AlignmentSecretPath(config_), run().id()));
    return absl::OkStatus();
  }
  // Resuming without any checkpoint says so, rather than that its secret is missing.
  if (!CheckpointSlots(StatePath(config_)).Exists())
    return NothingToResume(config_, run().id(), NoCheckpointToResume(config_));
  ASSIGN_OR_RETURN(party_secret_,
                   ReadHexSecret(PartySecretPath(config_),
                                 "it holds the secret this party's networks and shards "
                                 "were drawn from, and the run cannot continue without it"));
  return absl::OkStatus();
}

absl::Status VerticalPartyCore::OpenCheckpoint() {
  auto state = std::make_unique<CheckpointSlots>(StatePath(config_));
  const std::string path = absl::StrCat(StatePath(config_), ".{0,1}");
  auto checkpoint = state->Read();
  if (!resume_) {
    if (checkpoint.status().code() != absl::StatusCode::kNotFound) {
      return absl::FailedPreconditionError(
          absl::StrCat("a checkpoint already exists at ", path,
                       checkpoint.ok() ? absl::StrCat(" (run '", checkpoint->header.run_id(),
                                                      "', step ", checkpoint->header.step(), ")")
                                       : "",
                       ": pass --resume to continue that run, or remove ", config_.checkpoint_dir(),
                       " (or set checkpoint_dir) to start over"));
    }
    RETURN_IF_ERROR(MakeDirectories(config_.checkpoint_dir()));
    RETURN_IF_ERROR(WritePrivateFile(PartySecretPath(config_), party_secret_));
    RETURN_IF_ERROR(ReplyJournal::Remove(JournalPath(config_)));
    RETURN_IF_ERROR(OpenDurability(std::move(state), -1));
    RETURN_IF_ERROR(durability_->Commit(-1));
    return durability_->AwaitCommit();
  }
  if (checkpoint.status().code() == absl::StatusCode::kNotFound)
    return NoCheckpointToResume(config_);
  if (!checkpoint.ok()) return checkpoint.status();
  RETURN_IF_ERROR(CheckCheckpointMatches(checkpoint->header, CheckpointHeader(0), path));
  RETURN_IF_ERROR(CheckLedgerBinding(checkpoint->header, path));
  RETURN_IF_ERROR(RestorePartyState(checkpoint->payload, *model_));
  if (!state->damaged().empty()) {
    damaged_slot_ = absl::StrCat("it resumed from the older checkpoint slot because ",
                                 state->damaged());
    spdlog::warn("{}; resuming from critic step {} (expected if the party stopped while "
                 "writing it)",
                 state->damaged(), checkpoint->header.step());
  }
  RETURN_IF_ERROR(OpenDurability(std::move(state), checkpoint->header.step()));
  spdlog::info("resumed from {}: critic step {} committed, {} journaled replies", path,
               durability_->committed_step(), durability_->journaled());
  return absl::OkStatus();
}

absl::Status VerticalPartyCore::OpenDurability(std::unique_ptr<CheckpointSlots> state,
                                               int64_t committed_step) {
  ASSIGN_OR_RETURN(
      durability_,
      PartyDurability::Open(
          mode_, training_.n_critic(), JournalPath(config_), model_.get(), std::move(state),
          [this](int64_t step) { return CheckpointHeader(step); }, committed_step));
  return absl::OkStatus();
}

int64_t VerticalPartyCore::committed_step() const {
  return durability_ == nullptr ? -1 : durability_->committed_step();
}

absl::Status VerticalPartyCore::CheckLedgerBinding(const v1::CheckpointHeader& header,
                                                   const std::string& path) const {
  if (ledger_ == nullptr) return absl::OkStatus();
  return vfsynth::CheckLedgerBinding({header.ledger_id(), header.ledger_charges()},
                                     absl::StrCat("checkpoint ", path),
                                     {ledger_->id(), ledger_->charges()},
                                     absl::StrCat("privacy ledger ", ledger_->path()), "charges");
}

absl::Status VerticalPartyCore::PlanPrivacy() {
  const v1::PrivacyConfig& config = config_.privacy();
  const int64_t records = model_->rows();
  if (privacy::IsEnsembleMode(mode_) && config.ensemble().shards() > records) {
    return absl::FailedPreconditionError(absl::StrCat("privacy.ensemble.shards ",
                                                      config.ensemble().shards(), " exceeds the ",
                                                      records, " aligned records"));
  }
  ASSIGN_OR_RETURN(
      plan_, ResolvePrivacyPlan(config, training_, static_cast<int>(parties_.size()), records));
  RETURN_IF_ERROR(CheckPlanBudgets(plan_));
  for (const v1::ObserverGuarantee& guarantee : plan_.guarantees()) {
    spdlog::info("privacy {}: against {}", privacy::ModeName(mode_),
                 DescribeGuarantee(guarantee, config.delta()));
  }
  if (!privacy::TraitsOf(mode_).draws_noise()) {
    spdlog::warn("privacy mode 'none': no differential privacy for this party's records");
    return absl::OkStatus();
  }
  const double z = plan_.noise_multiplier();
  const privacy::RunShape shape = PrivacyShape();
  ASSIGN_OR_RETURN(const std::optional<double> own,
                   OwnReleasesEpsilonAfter(plan_, training_.rounds()));
  const bool dp = own.has_value();
  spdlog::info("privacy {}: noise multiplier {:.4f}{}, clip {}, q={:.5f}, {} critic steps{}",
               privacy::ModeName(mode_), z, privacy::DescribeReleaseNoise(mode_, z, shape),
               config.clip_norm(), static_cast<double>(shape.batch_size) / shape.records,
               shape.critic_steps,
               dp ? absl::StrFormat("; this party's own releases: epsilon %.3f", *own) : "");
  const double own_z = plan_.party_noise_multiplier();
  if (privacy::TraitsOf(mode_).dp_sgd_party_critic()) {
    const int64_t parameters = ParameterCount(*model_->feat()) + ParameterCount(*model_->head());
    const double noise = MeanGradientNoiseToClip(own_z, parameters, shape.batch_size);
    LogPlannedCriticNoise(privacy::ModeName(mode_), "critic", noise, parameters, shape.batch_size,
                          kNoisyCriticWarning);
  }
  // A run without a DP claim keeps no ledger: nothing it spends is an epsilon.
  if (dp) RETURN_IF_ERROR(OpenLedger());
  PartyPrivacy sanitiser;
  sanitiser.mode = config.mode();
  sanitiser.noise_multiplier = own_z;
  sanitiser.clip_norm = config.clip_norm();
  sanitiser.feature_clip_norm = config.feature_clip_norm();
  sanitiser.ensemble = config.ensemble();
  ASSIGN_OR_RETURN(sanitiser.noise, PartyNoise::FromOsEntropy());
  return model_->SetPrivacy(std::move(sanitiser));
}

absl::Status VerticalPartyCore::OpenLedger() {
  const v1::PrivacyConfig& config = config_.privacy();
  ASSIGN_OR_RETURN(const privacy::Conversion conversion,
                   privacy::ConversionOf(config.experimental().conversion()));
  // OpenCheckpoint checks that a resumed run's ledger is the one its checkpoint names.
  ASSIGN_OR_RETURN(
      ledger_, OpenPartyLedger(config, run().id(), privacy::Sampler::kWithoutReplacement,
                               conversion,
                               privacy::RunReleases(mode_, plan_.noise_multiplier(), PrivacyShape(),
                                                    plan_.rounds(), privacy::View::kJoint),
                               resume_));
  return absl::OkStatus();
}

absl::Status VerticalPartyCore::PlanMarginals() {
  if (training_.marginal_weight() <= 0) return absl::OkStatus();
  // Mode none: the exact marginals, no noise and no charge.
  const privacy::RunShape shape = PrivacyShape();
  std::optional<SecureRandom> noise;
  // Drawn here, charged (ChargeMarginalRelease) before anything of it leaves.
  if (privacy::TraitsOf(mode_).draws_noise()) {
    ASSIGN_OR_RETURN(noise, SecureRandom::FromOsEntropy());
  }
  ASSIGN_OR_RETURN(MarginalTarget target,
                   MarginalTarget::FromTable(
                       model_->table(), data_.encoder.blocks(), MarginalOptionsFor(training_),
                       shape.marginal_noise_multiplier, noise.has_value() ? &*noise : nullptr));
  if (noise.has_value() && resume_) {
    spdlog::info(
        "privacy {}: resuming, the checkpoint's marginal release replaces this start-up draw",
        privacy::ModeName(mode_));
  } else if (noise.has_value()) {
    spdlog::info(
        "privacy {}: released the marginals of {} one-hot blocks and {} pairs of them, noise "
        "multiplier {:.4f}",
        privacy::ModeName(mode_), target.blocks(), target.pairs(), shape.marginal_noise_multiplier);
  }
  model_->SetMarginalTarget(std::move(target));
  return absl::OkStatus();
}

absl::Status VerticalPartyCore::ChargeMarginalRelease() {
  if (training_.marginal_weight() <= 0 || ledger_ == nullptr) return absl::OkStatus();
  const std::optional<privacy::LedgerCharge> charge =
      privacy::MarginalReleaseCharge(mode_, PrivacyShape());
  if (!charge.has_value()) return absl::InternalError("marginal release without a ledger charge");
  RETURN_IF_ERROR(ledger_->Charge(charge->key, charge->mechanism, charge->steps));
  // Resuming, the checkpoint's draw: the one this charge covers.
  const torch::Tensor marginals = model_->marginal_target()->probabilities().contiguous();
  return ledger_->RecordRelease(
      charge->key, kMarginalReleaseName,
      Sha256Hex(absl::string_view(static_cast<const char*>(marginals.data_ptr()),
                                  marginals.numel() * marginals.element_size())));
}

int64_t VerticalPartyCore::MarginalReleaseKey() const {
  const std::optional<privacy::LedgerCharge> charge =
      privacy::MarginalReleaseCharge(mode_, PrivacyShape());
  return charge.has_value() ? charge->key : 0;
}

namespace {

std::string ReleasePath(const v1::PartyConfig& config, const char* name) {
  return (std::filesystem::path(config.checkpoint_dir()) / name).string();
}

}  // namespace

absl::StatusOr<v1::ShareLabelsRequest> VerticalPartyCore::MakeShareLabelsRequest() {
  if (!run().plan_attested())
    return absl::FailedPreconditionError("label release before the privacy plans matched");
  absl::StatusOr<OutputBlock> label = data_.encoder.CategoricalBlock(training_.label_column());
  if (absl::IsNotFound(label.status())) {
    v1::ShareLabelsRequest request;
    request.set_run_id(run().id());
    request.set_party(config_.name());
    return request;
  }
  if (!label.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("training.label_column: ", label.status().message()));
  // The ledger's marginal-release charge (ChargeMarginalRelease) covers this release.
  const std::string path = ReleasePath(config_, "labels.release");
  return BoundRelease<v1::ShareLabelsRequest>(ledger_.get(), MarginalReleaseKey(), path, [&] {
    return HolderLabelRelease(path, run().id(), config_.name(), model_->table(), *label,
                              PrivacyShape().label_epsilon);
  });
}

absl::StatusOr<std::optional<v1::LabelPairsRequest>> VerticalPartyCore::MakeLabelPairsRequest(
    const v1::ShareLabelsResponse& labels) {
  if (!run().plan_attested()) {
    return absl::FailedPreconditionError("label-pair release before the privacy plans matched");
  }
  if (data_.encoder.CategoricalBlock(training_.label_column()).ok()) return std::nullopt;
  const std::string path = ReleasePath(config_, "label_pairs.release");
  return BoundRelease<v1::LabelPairsRequest>(ledger_.get(), MarginalReleaseKey(), path, [&] {
    return LabelPairRelease(path, run().id(), config_.name(), labels, model_->table(),
                            data_.encoder.blocks(), PrivacyShape().marginal_noise_multiplier);
  });
}

absl::StatusOr<std::optional<v1::MarginalsRequest>> VerticalPartyCore::MakeMarginalsRequest() {
  if (training_.marginal_weight() <= 0) return std::nullopt;
  if (!run().plan_attested())
    return absl::FailedPreconditionError("marginal release before the privacy plans matched");
  v1::MarginalsRequest request;
  request.set_run_id(run().id());
  request.set_party(config_.name());
  ToWire(model_->marginal_target()->probabilities(), request.mutable_probabilities());
  return request;
}

absl::Status VerticalPartyCore::ChargeStep(int64_t step) {
  if (ledger_ == nullptr) return absl::OkStatus();
  const privacy::LedgerCharge charge =
      privacy::CriticStepCharge(mode_, plan_.noise_multiplier(), PrivacyShape(), step);
  return ledger_->Charge(charge.key, charge.mechanism, charge.steps);
}

absl::Status VerticalPartyCore::ChargeGeneratorRound(int64_t round) {
  if (ledger_ == nullptr) return absl::OkStatus();
  const std::optional<privacy::LedgerCharge> charge =
      privacy::GeneratorRoundCharge(mode_, plan_.noise_multiplier(), PrivacyShape(), round);
  if (!charge.has_value()) return absl::OkStatus();
  return ledger_->Charge(charge->key, charge->mechanism, charge->steps);
}

absl::Status VerticalPartyCore::StartChargeOf(const v1::CuratorMessage& message) {
  if (message.has_critic_task()) {
    return durability_->StartCharge([this, step = message.step()] { return ChargeStep(step); });
  }
  if (message.has_generator_feature_gradient()) {
    return durability_->StartCharge(
        [this, round = message.round()] { return ChargeGeneratorRound(round); });
  }
  return absl::OkStatus();
}

privacy::RunShape VerticalPartyCore::PrivacyShape() const { return PlanShape(plan_); }

double VerticalPartyCore::epsilon_planned() const {
  if (plan_.guarantees().empty()) return 0;  // not planned yet
  const v1::ObserverGuarantee& published = Guarantee(plan_, Observer::kPublished);
  return published.has_epsilon_planned() ? published.epsilon_planned() : 0;
}

double VerticalPartyCore::epsilon_spent() const {
  return ledger_ == nullptr ? 0.0 : ledger_->Spent().epsilon;
}

v1::PartyMessage VerticalPartyCore::MakeHello() const {
  return HelloOf(run().id(), config_.name(), committed_step());
}

v1::PartyMessage VerticalPartyCore::Reply(const v1::CuratorMessage& to) const {
  v1::PartyMessage reply;
  reply.set_run_id(run().id());
  reply.set_round(to.round());
  reply.set_step(to.step());
  return reply;
}

absl::Status VerticalPartyCore::Check(const v1::Tensor& tensor, int64_t cols,
                                      const std::string& name) const {
  return ValidateTensor(tensor, {training_.batch_size(), cols}, name, config_.max_message_bytes());
}

bool VerticalPartyCore::IsRoundMessage(v1::CuratorMessage::PayloadCase payload) const {
  return payload == v1::CuratorMessage::kCriticTask ||
         payload == v1::CuratorMessage::kFeatureGradients ||
         payload == v1::CuratorMessage::kGeneratorTask ||
         payload == v1::CuratorMessage::kGeneratorFeatureGradient;
}

absl::Status VerticalPartyCore::Finish(const v1::Finished& finished) {
  RETURN_IF_ERROR(durability_->Finish());
  const int64_t last_step = plan_.rounds() * training_.n_critic() - 1;
  if (finished.succeeded() && durability_->committed_step() != last_step) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the curator says the run finished, but this party's critic has committed step ",
        durability_->committed_step(), " of ", last_step,
        ": the curator's state is not the run this party trained in (a checkpoint of another "
        "run?); this party does not take its generator as the run's"));
  }
  return absl::OkStatus();
}

absl::Status VerticalPartyCore::PrepareAhead() {
  if (model_ == nullptr || finished()) return absl::OkStatus();
  const int64_t pending = model_->pending_step();
  if (pending < 0) return durability_->JournalSent();
  ScopedStep timing(profile_, v1::STEP_CRITIC_PREPARE, pending);
  RETURN_IF_ERROR(
      Timed(profile_, StepPhase::kDurability, [&] { return durability_->JournalSent(); }));
  ScopedPhase compute(profile_, StepPhase::kCompute);
  return CatchLibTorch([&] {
    model_->PrepareAhead();
    return absl::OkStatus();
  });
}

absl::Status VerticalPartyCore::CheckRoundMessage(const v1::CuratorMessage& message) const {
  const int64_t d_k = model_->width();
  const int64_t d_h = model_config_.feature_dim();
  const bool step_in_round =
      message.step() >= 0 && message.step() / training_.n_critic() == message.round();
  switch (message.payload_case()) {
    case v1::CuratorMessage::kCriticTask:
      if (!step_in_round) {
        return absl::InvalidArgumentError(absl::StrCat(
            "critic step ", message.step(), " does not belong to round ", message.round()));
      }
      return Check(message.critic_task().fake_slice(), d_k, "critic_task.fake_slice");
    case v1::CuratorMessage::kFeatureGradients:
      if (!step_in_round) {
        return absl::InvalidArgumentError(absl::StrCat("feature gradients for critic step ",
                                                       message.step(), " in round ",
                                                       message.round()));
      }
      RETURN_IF_ERROR(
          Check(message.feature_gradients().grad_real(), d_h, "feature_gradients.grad_real"));
      return Check(message.feature_gradients().grad_fake(), d_h, "feature_gradients.grad_fake");
    case v1::CuratorMessage::kGeneratorTask:
      return Check(message.generator_task().fake_slice(), d_k, "generator_task.fake_slice");
    default:
      return Check(message.generator_feature_gradient().grad(), d_h,
                   "generator_feature_gradient.grad");
  }
}

absl::Status VerticalPartyCore::CheckWithinPlan(const v1::CuratorMessage& message) const {
  // The plan's ε counts rounds 0 .. rounds - 1 of n_critic steps each, and so do the
  // ledger's budgets: a curator asking past them gets nothing, charged or released.
  if (message.round() >= 0 && message.round() < plan_.rounds()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the curator asks for round ", message.round(), " (step ", message.step(),
      ") but the privacy plan has rounds 0 to ", plan_.rounds() - 1, " of ",
      training_.n_critic(), " critic steps: refused, nothing charged or released"));
}

namespace {

// How handling `message` is recorded in the step profile (docs/performance.md).
v1::StepKind StepKindOf(const v1::CuratorMessage& message) {
  if (message.has_critic_task()) return v1::STEP_CRITIC;
  if (message.has_feature_gradients()) return v1::STEP_CRITIC_UPDATE;
  if (message.has_generator_task()) return v1::STEP_GENERATOR;
  return v1::STEP_GENERATOR_GRADIENT;
}

int64_t StepIndexOf(const v1::CuratorMessage& message) {
  return message.has_critic_task() || message.has_feature_gradients() ? message.step()
                                                                      : message.round();
}

}  // namespace

absl::StatusOr<std::vector<v1::PartyMessage>> VerticalPartyCore::HandleRound(
    const v1::CuratorMessage& message) {
  ScopedStep timing(profile_, StepKindOf(message), StepIndexOf(message));
  RETURN_IF_ERROR(Timed(profile_, StepPhase::kCodec, [&] { return CheckRoundMessage(message); }));
  RETURN_IF_ERROR(CheckWithinPlan(message));
  if (message.has_feature_gradients()) {
    RETURN_IF_ERROR(UpdateCritic(message));
    return std::vector<v1::PartyMessage>();
  }
  ASSIGN_OR_RETURN(v1::PartyMessage reply, ReplyTo(message));
  std::vector<v1::PartyMessage> replies;
  replies.push_back(std::move(reply));
  return replies;
}

absl::Status VerticalPartyCore::UpdateCritic(const v1::CuratorMessage& message) {
  ASSIGN_OR_RETURN(const bool apply, Timed(profile_, StepPhase::kDurability, [&] {
                     return durability_->BeforeCriticUpdate(message);
                   }));
  if (!apply) return absl::OkStatus();  // already applied: the curator resent or replays the step
  torch::Tensor grad_real;
  torch::Tensor grad_fake;
  {
    ScopedPhase codec(profile_, StepPhase::kCodec);
    grad_real = FromWire(message.feature_gradients().grad_real());
    grad_fake = FromWire(message.feature_gradients().grad_fake());
  }
  RETURN_IF_ERROR(Timed(profile_, StepPhase::kCompute, [&] {
    return model_->CriticUpdate(message.step(), grad_real, grad_fake).status();
  }));
  return Timed(profile_, StepPhase::kDurability,
               [&] { return durability_->AfterCriticUpdate(message.step()); });
}

absl::StatusOr<v1::PartyMessage> VerticalPartyCore::ReplyTo(const v1::CuratorMessage& message) {
  ASSIGN_OR_RETURN(std::optional<v1::PartyMessage> journaled,
                   Timed(profile_, StepPhase::kDurability,
                         [&] { return durability_->BeforeQuestion(message); }));
  const bool answered_before = journaled.has_value();
  v1::PartyMessage reply;
  if (answered_before) {
    RETURN_IF_ERROR(RebuildPending(message));
    // Charged again, a no-op while the ledger holds the charge: a ledger that lost its
    // last lines gets them back instead of the reply leaving again uncounted.
    RETURN_IF_ERROR(StartChargeOf(message));
    reply = *std::move(journaled);
  } else {
    ASSIGN_OR_RETURN(reply, Answer(message));
  }
  RETURN_IF_ERROR(Timed(profile_, StepPhase::kDurability, [&] {
    return durability_->BeforeReplyLeaves(message, reply, answered_before);
  }));
  return reply;
}

absl::StatusOr<v1::PartyMessage> VerticalPartyCore::Answer(const v1::CuratorMessage& message) {
  const int64_t last_step_of_round =
      message.round() * training_.n_critic() + training_.n_critic() - 1;
  const int64_t committed_step = durability_->committed_step();
  v1::PartyMessage reply = Reply(message);
  // A charge's fsync overlaps the computation; its reply leaves only once it is durable
  // (PartyDurability::BeforeReplyLeaves), and is discarded unsent if it fails.
  if (message.has_critic_task()) {
    if (message.step() != committed_step + 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the curator asks for critic step ", message.step(),
          " but this party's critic has committed step ", committed_step,
          message.step() <= committed_step
              ? " and no journaled answer for it (is the curator's checkpoint older than "
                "the rounds it announced as durable?)"
              : damaged_slot_.empty()
                  ? " (is this party's checkpoint older than the run?)"
                  : absl::StrCat(": this party's checkpoint is older than the run (",
                                 damaged_slot_, ")")));
    }
    RETURN_IF_ERROR(StartChargeOf(message));
    const torch::Tensor slice = Timed(profile_, StepPhase::kCodec,
                                      [&] { return FromWire(message.critic_task().fake_slice()); });
    ASSIGN_OR_RETURN(const auto features, Timed(profile_, StepPhase::kCompute, [&] {
                       return model_->CriticFeatures(message.step(), slice);
                     }));
    ScopedPhase codec(profile_, StepPhase::kCodec);
    ToWire(features.first, reply.mutable_features()->mutable_h_real());
    ToWire(features.second, reply.mutable_features()->mutable_h_fake());
  } else if (message.has_generator_task()) {
    if (committed_step != last_step_of_round) {
      return absl::FailedPreconditionError(
          absl::StrCat("the curator starts generator round ", message.round(),
                       " but this party's critic has committed step ", committed_step, ", not ",
                       last_step_of_round));
    }
    const torch::Tensor slice = Timed(profile_, StepPhase::kCodec, [&] {
      return FromWire(message.generator_task().fake_slice());
    });
    const torch::Tensor features = Timed(profile_, StepPhase::kCompute, [&] {
      return model_->GeneratorFeatures(message.round(), slice);
    });
    ScopedPhase codec(profile_, StepPhase::kCodec);
    ToWire(features, reply.mutable_generator_features()->mutable_h());
  } else {
    RETURN_IF_ERROR(model_->CheckPendingRound(message.round()));
    RETURN_IF_ERROR(StartChargeOf(message));
    const torch::Tensor grad_features = Timed(profile_, StepPhase::kCodec, [&] {
      return FromWire(message.generator_feature_gradient().grad());
    });
    ASSIGN_OR_RETURN(const torch::Tensor grad, Timed(profile_, StepPhase::kCompute, [&] {
                       return model_->SliceGradient(message.round(), grad_features);
                     }));
    ScopedPhase codec(profile_, StepPhase::kCodec);
    ToWire(grad, reply.mutable_slice_gradient()->mutable_grad());
  }
  return reply;
}

absl::Status VerticalPartyCore::RebuildPending(const v1::CuratorMessage& message) {
  const int64_t last_step_of_round =
      message.round() * training_.n_critic() + training_.n_critic() - 1;
  const int64_t committed_step = durability_->committed_step();
  if (message.has_critic_task() && message.step() == committed_step + 1) {
    // Its update is still to come; the recomputed (noisy) output is discarded unsent.
    return model_->CriticFeatures(message.step(), FromWire(message.critic_task().fake_slice()))
        .status();
  }
  if (message.has_generator_task() && committed_step == last_step_of_round) {
    model_->GeneratorFeatures(message.round(), FromWire(message.generator_task().fake_slice()));
  }
  return absl::OkStatus();
}

}  // namespace vfsynth
