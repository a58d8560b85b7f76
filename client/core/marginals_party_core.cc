#include "client/core/marginals_party_core.h"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "client/core/alignment_secret.h"
#include "client/core/kept_release.h"
#include "client/core/party_ledger.h"
#include "client/core/party_table.h"
#include "client/core/vertical_party_core.h"
#include "common/base/file_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/alignment.h"
#include "common/marginals/party_measurement.h"
#include "common/privacy/privacy_plan.h"
#include "common/random/secure_random.h"
#include "common/secure/authenticated_list.h"
#include "common/secure/cross_counts.h"
#include "common/secure/signed_list.h"

namespace vfsynth {
namespace {

// The ledger key of the plan's one charge: every histogram, released once.
constexpr int64_t kMeasurementKey = 0;
constexpr char kRecordsPurpose[] = "marginals/records";
constexpr char kSumsPurpose[] = "marginals/sums";
constexpr int kEncryptionThreads = 2;

// The kept answers' file names, per task kind and peer (under checkpoint_dir/marginals).
std::string RecordsAnswer(const std::string& peer) {
  return absl::StrCat("records-", peer, ".answer");
}
std::string SumsAnswer(const std::string& peer) { return absl::StrCat("sums-", peer, ".answer"); }
std::string CountsAnswer(const std::string& peer) {
  return absl::StrCat("counts-", peer, ".answer");
}

// All the plan's histograms, released once: together one Gaussian of the plan's noise
// multiplier (their ρ composed), as the plan's ε counts them.
privacy::StepMechanism MeasurementMechanism(const v1::PrivacyPlan& plan) {
  privacy::StepMechanism mechanism;
  mechanism.noise_multipliers = {plan.noise_multiplier()};
  mechanism.sample_rate = 1.0;
  return mechanism;
}

absl::Status SameColumn(const v1::PlannedColumn& ours, const v1::PlannedColumn& theirs) {
  if (ours.SerializeAsString() == theirs.SerializeAsString()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the curator plans column '", theirs.name(), "' (party ", theirs.party(), ", width ",
      theirs.width(), ", cells ", theirs.cells(), ") where this party holds '", ours.name(),
      "' (width ", ours.width(), ", cells ", ours.cells(), ")"));
}

}  // namespace

absl::StatusOr<std::string> MarginalsListKey(const std::string& alignment_key) {
  return secure::DeriveListKey(alignment_key, "marginals/lists");
}

absl::StatusOr<std::unique_ptr<MarginalsPartyCore>> MarginalsPartyCore::Create(
    const v1::PartyConfig& config, bool resume) {
  if (config.privacy().mode() != v1::PrivacyConfig::marginals) {
    return absl::InvalidArgumentError("a measured-marginals party needs privacy.mode marginals");
  }
  const std::string secret_path = PartySecretPath(config);
  if (!resume && std::filesystem::exists(secret_path)) {
    return absl::FailedPreconditionError(
        absl::StrCat("a run's state already exists at ", secret_path,
                     ": pass --resume to continue that run, or remove ", config.checkpoint_dir(),
                     " (or set checkpoint_dir) to start over"));
  }
  ASSIGN_OR_RETURN(const PartySecrets secrets, LoadPartySecrets(config.secrets()));
  ASSIGN_OR_RETURN(PartyData data, LoadPartyTable(config));
  ASSIGN_OR_RETURN(std::vector<std::string> tokens,
                   AlignmentTokens(secrets.alignment_key, data.ids));
  ASSIGN_OR_RETURN(std::string list_key, MarginalsListKey(secrets.alignment_key));
  auto alignment = std::make_unique<RecordAlignment>(
      config.name(), data.ids, std::move(tokens), secrets.alignment_key, AnsweredHopsPath(config));
  ASSIGN_OR_RETURN(ListIdentity identity, LoadListIdentity(config.tls()));
  if (!identity.signer.has_value()) {
    spdlog::warn("no TLS identity: the lists between parties are not signed by their sender");
  }
  PlanAttestation attestation(config.name(), identity,
                              SharedSecrets{secrets.sampling_secret, secrets.alignment_key});
  return std::unique_ptr<MarginalsPartyCore>(
      new MarginalsPartyCore(config, std::move(list_key), std::move(data), std::move(alignment),
                             std::move(identity), std::move(attestation), resume));
}

MarginalsPartyCore::MarginalsPartyCore(v1::PartyConfig config, std::string list_key, PartyData data,
                                       std::unique_ptr<RecordAlignment> alignment,
                                       ListIdentity identity, PlanAttestation attestation,
                                       bool resume)
    : config_(std::move(config)),
      resume_(resume),
      data_(std::move(data)),
      alignment_(std::move(alignment)),
      list_key_(std::move(list_key)),
      identity_(std::move(identity)),
      attestation_(std::move(attestation)) {}

std::string MarginalsPartyCore::StatePath(const std::string& name) const {
  return (std::filesystem::path(config_.checkpoint_dir()) / "marginals" / name).string();
}

v1::RegisterRequest MarginalsPartyCore::MakeRegisterRequest() const {
  return VerticalRegisterRequest(config_, data_.encoder.schema(), data_.encoded.rows);
}

absl::Status MarginalsPartyCore::AcceptRegistration(const v1::RegisterResponse& response) {
  RETURN_IF_ERROR(CheckRegisterResponse(response, v1::Topology::vertical));
  v1::TrainingConfig training = response.training();
  if (const absl::Status status = ResolveTrainingConfig(&training); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("curator's run settings: ", status.message()));
  }
  Sha256Builder settings;
  settings.Add(response.model().SerializeAsString()).Add(training.SerializeAsString());
  for (const std::string& party : response.parties()) settings.Add(party);
  ASSIGN_OR_RETURN(const bool joined, JoinRun(response, settings.Hex(), config_, resume_, &run()));
  if (!joined) return absl::OkStatus();
  training_ = training;
  parties_.assign(response.parties().begin(), response.parties().end());
  ASSIGN_OR_RETURN(index_, PartyIndex(config_.name()));
  return absl::OkStatus();
}

absl::StatusOr<int> MarginalsPartyCore::PartyIndex(const std::string& name) const {
  const auto it = std::find(parties_.begin(), parties_.end(), name);
  if (it == parties_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a party of the run"));
  }
  return static_cast<int>(it - parties_.begin());
}

absl::StatusOr<v1::AlignRequest> MarginalsPartyCore::MakeAlignRequest() {
  if (party_secret_.empty()) {
    const std::string path = PartySecretPath(config_);
    // party.secret is written once aligned: without it this party never finished an
    // alignment here, so there is nothing to resume.
    if (resume_ && !std::filesystem::exists(path)) {
      return NothingToResume(
          config_, run().id(),
          absl::FailedPreconditionError(absl::StrCat(
              "--resume: this party has nothing of run '", run().id(), "' to resume in ",
              config_.checkpoint_dir(),
              " (it stopped before its alignment list left, so it wrote no state): start it "
              "without --resume")));
    }
    ASSIGN_OR_RETURN(party_secret_,
                     resume_
                         ? ReadHexSecret(path, "it holds the secret of this party's alignment list")
                         : KeptOrNewAlignmentSecret(AlignmentSecretPath(config_), run().id()));
  }
  return alignment_->FirstRequest(run().id(), parties_, party_secret_);
}

absl::StatusOr<std::optional<v1::AlignRequest>> MarginalsPartyCore::AnswerAlign(
    const v1::AlignResponse& response) {
  ASSIGN_OR_RETURN(std::optional<v1::AlignRequest> next, alignment_->Answer(response));
  if (next.has_value()) return next;
  if (run().aligned()) return std::nullopt;  // a reconnect: RecordAlignment checked the rows
  RETURN_IF_ERROR(AcceptAlignment(*alignment_->aligned(), response.aligned().columns()));
  return std::nullopt;
}

absl::Status MarginalsPartyCore::AcceptAlignment(
    const AlignedRows& aligned,
    const google::protobuf::RepeatedPtrField<v1::PlannedColumn>& columns) {
  ReorderRows(aligned.order, &data_);
  table_ = torch::from_blob(data_.encoded.values.data(),
                            {data_.encoded.rows, data_.encoder.width()}, torch::kFloat32)
               .clone();
  data_.encoded.values.clear();
  own_ = marginals::LayoutOf({&data_.encoder}, training_.label_column(),
                             config_.privacy().measurement());
  for (v1::PlannedColumn& column : own_.columns) column.set_party(index_);
  // This party's columns are where the curator lists them, as this party sees them, and
  // no others carry its index (they would index past its own).
  int listed = 0;
  for (int c = 0; c < columns.size(); ++c) {
    if (c > 0 && columns[c].party() < columns[c - 1].party()) {
      return absl::FailedPreconditionError("the curator lists the columns out of party order");
    }
    if (columns[c].party() == index_) ++listed;
  }
  if (listed != static_cast<int>(own_.columns.size())) {
    return absl::FailedPreconditionError(absl::StrCat("the curator lists ", listed,
                                                      " columns of this party, which holds ",
                                                      own_.columns.size()));
  }
  first_column_ = 0;
  while (first_column_ < columns.size() && columns[first_column_].party() < index_) ++first_column_;
  for (size_t c = 0; c < own_.columns.size(); ++c) {
    RETURN_IF_ERROR(SameColumn(own_.columns[c], columns[first_column_ + static_cast<int>(c)]));
  }
  ASSIGN_OR_RETURN(
      plan_, ResolveMarginalsPlan(config_.privacy(), training_, {columns.begin(), columns.end()},
                                  static_cast<int>(parties_.size()),
                                  static_cast<int64_t>(aligned.order.size())));
  RETURN_IF_ERROR(CheckPlanBudgets(plan_));
  RETURN_IF_ERROR(attestation_.State(run().id(), run().nonce(), plan_));
  ASSIGN_OR_RETURN(const privacy::Conversion conversion,
                   privacy::ConversionOf(config_.privacy().experimental().conversion()));
  ASSIGN_OR_RETURN(
      ledger_, OpenPartyLedger(config_.privacy(), run().id(), privacy::Sampler::kWithoutReplacement,
                               conversion, {{MeasurementMechanism(plan_), 1}}, resume_));
  RETURN_IF_ERROR(MakeDirectories(StatePath("")));
  // Every sealed list names the plan and the records it is about, and a resumed party
  // keeps both: another plan or another alignment after a restart would let a new
  // measurement leave under the first one's charge.
  binding_ = absl::StrCat(PlanDigest(plan_), ":", aligned.digest);
  const std::string binding_path = StatePath("plan-and-records.sha256");
  if (std::filesystem::exists(binding_path)) {
    ASSIGN_OR_RETURN(const std::string kept, ReadFile(binding_path));
    if (kept != binding_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the curator's plan or aligned records differ from those this party measured under (",
          binding_path, "): refused"));
    }
  } else {
    RETURN_IF_ERROR(WritePrivateFile(binding_path, binding_));
  }
  if (!resume_) {
    RETURN_IF_ERROR(WritePrivateFile(PartySecretPath(config_), party_secret_));
  }
  run().set_aligned();
  spdlog::info("aligned: {} records; the plan measures {} histograms over {} columns",
               aligned.order.size(), plan_.measurements_size(), plan_.columns_size());
  return absl::OkStatus();
}

v1::AttestPlanRequest MarginalsPartyCore::MakeAttestPlanRequest() const {
  return AttestPlanRequestOf(run().id(), config_.name(), plan_, attestation_.statement());
}

v1::AttestPlanRequest MarginalsPartyCore::MakeRefusal(const absl::Status& reason) const {
  return RefusalOf(run().id(), config_.name(), reason);
}

absl::Status MarginalsPartyCore::AcceptCuratorPlan(const v1::AttestPlanResponse& response) {
  if (!run().aligned()) return absl::FailedPreconditionError("privacy plan before alignment");
  RETURN_IF_ERROR(CheckAttestedPlan(config_.name(), plan_, attestation_, parties_, response));
  if (!run().plan_attested()) {
    spdlog::info("the curator's privacy plan matches this party's ({})",
                 PlanDigest(plan_).substr(0, 16));
  }
  run().set_plan_attested();
  return absl::OkStatus();
}

v1::PartyMessage MarginalsPartyCore::MakeHello() const {
  return HelloOf(run().id(), config_.name(), -1);
}

double MarginalsPartyCore::epsilon_spent() const {
  return ledger_ == nullptr ? 0.0 : ledger_->Spent().epsilon;
}

absl::Status MarginalsPartyCore::Finish(const v1::Finished& /*finished*/) {
  if (run().aligned()) RETURN_IF_ERROR(ErasePaillierKeyIfDone());
  spdlog::info("the run ended: epsilon {:.4g} of this party's ledger spent",
               ledger_ == nullptr ? 0.0 : ledger_->Spent().epsilon);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::PartyMessage>> MarginalsPartyCore::HandleRound(
    const v1::CuratorMessage& message) {
  const v1::MarginalsTask& task = message.marginals_task();
  absl::StatusOr<v1::PartyMessage> answer;
  switch (task.kind_case()) {
    case v1::MarginalsTask::kOwn:
      answer = OwnAnswer(task.own());
      break;
    case v1::MarginalsTask::kEncrypt:
      answer = EncryptAnswer(task.encrypt());
      break;
    case v1::MarginalsTask::kSum:
      answer = SumAnswer(task.sum());
      break;
    case v1::MarginalsTask::kDecrypt:
      answer = DecryptAnswer(task.decrypt());
      if (answer.ok()) RETURN_IF_ERROR(ErasePaillierKeyIfDone());
      break;
    case v1::MarginalsTask::KIND_NOT_SET:
      return absl::InvalidArgumentError("a measurement task of no kind");
  }
  RETURN_IF_ERROR(answer.status());
  answer->set_run_id(run().id());
  answer->set_round(message.round());
  answer->set_step(message.step());
  return std::vector<v1::PartyMessage>{*std::move(answer)};
}

absl::StatusOr<v1::PartyMessage> MarginalsPartyCore::Kept(
    const std::string& name, bool noisy,
    absl::FunctionRef<absl::StatusOr<v1::PartyMessage>()> answer) {
  const std::string path = StatePath(name);
  auto kept = [&]() -> absl::StatusOr<v1::PartyMessage> {
    v1::PartyMessage message;
    if (std::filesystem::exists(path)) {
      ASSIGN_OR_RETURN(const std::string bytes, ReadFile(path));
      if (!message.ParseFromString(bytes)) {
        return absl::DataLossError(absl::StrCat("kept answer ", path, " does not parse"));
      }
      return message;
    }
    ASSIGN_OR_RETURN(message, answer());
    RETURN_IF_ERROR(WritePrivateFile(path, message.SerializeAsString()));
    return message;
  };
  if (!noisy || noiseless_) return kept();
  // Charged before any count is drawn; idempotent, so a re-asked task charges nothing twice.
  RETURN_IF_ERROR(ledger_->Charge(kMeasurementKey, MeasurementMechanism(plan_)));
  return BoundRelease<v1::PartyMessage>(ledger_.get(), kMeasurementKey, path, kept);
}

absl::StatusOr<v1::PartyMessage> MarginalsPartyCore::OwnAnswer(const v1::MarginalsTask::Own& task) {
  const std::vector<int> histograms(task.histograms().begin(), task.histograms().end());
  std::vector<int> expected;
  for (int h = 0; h < plan_.measurements_size(); ++h) {
    const v1::MeasuredHistogram& m = plan_.measurements(h);
    const bool own = std::all_of(m.columns().begin(), m.columns().end(), [&](int c) {
      return c >= 0 && c < plan_.columns_size() && plan_.columns(c).party() == index_;
    });
    if (own && !m.cross_party()) expected.push_back(h);
  }
  if (histograms != expected) {
    return absl::InvalidArgumentError(
        "the curator asks for other histograms than this party's own in the attested plan");
  }
  return Kept("own.answer", true, [&]() -> absl::StatusOr<v1::PartyMessage> {
    std::optional<SecureRandom> noise;
    if (!noiseless_) {
      ASSIGN_OR_RETURN(noise, SecureRandom::FromOsEntropy());
    }
    ASSIGN_OR_RETURN(const std::vector<int64_t> counts,
                     marginals::OwnCounts(table_, own_, first_column_, plan_, histograms,
                                          noise.has_value() ? &*noise : nullptr));
    v1::PartyMessage reply;
    reply.mutable_measured_counts()->mutable_histograms()->Add(histograms.begin(),
                                                               histograms.end());
    reply.mutable_measured_counts()->mutable_counts()->Add(counts.begin(), counts.end());
    return reply;
  });
}

absl::StatusOr<marginals::CrossPair> MarginalsPartyCore::PairWith(const std::string& peer,
                                                                  bool low) const {
  ASSIGN_OR_RETURN(const int other, PartyIndex(peer));
  for (marginals::CrossPair& pair : marginals::CrossPairsOf(plan_)) {
    if (low && pair.low == index_ && pair.high == other) return pair;
    if (!low && pair.high == index_ && pair.low == other) return pair;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the attested plan has no cross histograms of this party ",
                   low ? "before" : "after", " '", peer, "'"));
}

absl::StatusOr<const secure::PaillierPrivateKey*> MarginalsPartyCore::PaillierKey() {
  if (paillier_.has_value()) return &*paillier_;
  const std::string path = StatePath("paillier.key");
  if (std::filesystem::exists(path)) {
    ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
    absl::StatusOr<secure::PaillierPrivateKey> key = secure::PaillierPrivateKey::Deserialize(bytes);
    OPENSSL_cleanse(bytes.data(), bytes.size());
    RETURN_IF_ERROR(key.status());
    paillier_ = *std::move(key);
    return &*paillier_;
  }
  // A new key would not decrypt sums of the records this party already sent under the
  // one it erased (ErasePaillierKeyIfDone).
  for (const marginals::CrossPair& pair : marginals::CrossPairsOf(plan_)) {
    if (pair.low == index_ &&
        std::filesystem::exists(StatePath(RecordsAnswer(parties_[pair.high])))) {
      return absl::FailedPreconditionError(absl::StrCat(
          "this party's Paillier key is gone (", path, ") but its records for '",
          parties_[pair.high], "' were sent under it: the measurement cannot continue"));
    }
  }
  ASSIGN_OR_RETURN(paillier_, secure::PaillierPrivateKey::Generate());
  std::string bytes = paillier_->Serialize();
  const absl::Status written = WritePrivateFile(path, bytes);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  RETURN_IF_ERROR(written);
  return &*paillier_;
}

absl::Status MarginalsPartyCore::ErasePaillierKeyIfDone() {
  for (const marginals::CrossPair& pair : marginals::CrossPairsOf(plan_)) {
    if (pair.low == index_ &&
        !std::filesystem::exists(StatePath(CountsAnswer(parties_[pair.high])))) {
      return absl::OkStatus();  // sums still to decrypt
    }
  }
  // Every decryption is kept and a re-asked task gets the kept answer: the key has no
  // further use. Its BIGNUMs go with BN_clear_free (secure::BnPtr), its file is removed.
  paillier_.reset();
  encrypted_records_.clear();
  const std::string path = StatePath("paillier.key");
  std::error_code error;
  if (std::filesystem::remove(path, error)) {
    spdlog::info("every cross count decrypted: this party's Paillier key is erased");
  } else if (error) {
    return absl::InternalError(
        absl::StrCat("cannot remove the spent Paillier key ", path, ": ", error.message()));
  }
  return absl::OkStatus();
}

std::string MarginalsPartyCore::ListPurpose(const std::string& purpose) const {
  return absl::StrCat(purpose, "@", binding_);
}

absl::StatusOr<std::string> MarginalsPartyCore::SealFor(const std::string& peer,
                                                        const std::string& purpose,
                                                        const std::string& payload) const {
  const secure::ListHeader header{run().id(), config_.name(), peer, ListPurpose(purpose), 0};
  if (!identity_.signer.has_value()) return secure::Seal(list_key_, header, payload);
  ASSIGN_OR_RETURN(const std::string signed_payload, identity_.signer->Sign(header, payload));
  return secure::Seal(list_key_, header, signed_payload);
}

absl::StatusOr<std::string> MarginalsPartyCore::OpenFrom(const std::string& peer,
                                                         const std::string& purpose,
                                                         const std::string& sealed) {
  const secure::ListHeader header{run().id(), peer, config_.name(), ListPurpose(purpose), 0};
  absl::StatusOr<std::string> payload = secure::Open(list_key_, header, sealed);
  // The MAC keeps out the curator; the signature keeps out every other party, which holds
  // the MAC key too.
  if (payload.ok() && identity_.verifier.has_value()) {
    payload = identity_.verifier->Verify(header, PartyIdentityUri(peer), *payload);
  }
  if (!payload.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("the relayed ", purpose, " list from '", peer,
                     "' does not open: ", payload.status().message()));
  }
  const std::string digest = Sha256Hex(sealed);
  const std::string path = StatePath(
      absl::StrCat("from-", peer, "-", purpose == kRecordsPurpose ? "records" : "sums", ".sha256"));
  if (std::filesystem::exists(path)) {
    ASSIGN_OR_RETURN(const std::string first, ReadFile(path));
    if (first != digest) {
      return absl::PermissionDeniedError(absl::StrCat("the curator relays a second, different ",
                                                      purpose, " list from '", peer,
                                                      "' (a replayed or swapped list): refused"));
    }
  } else {
    RETURN_IF_ERROR(WritePrivateFile(path, digest));
  }
  return payload;
}

absl::StatusOr<v1::PartyMessage> MarginalsPartyCore::EncryptAnswer(
    const v1::MarginalsTask::Encrypt& task) {
  ASSIGN_OR_RETURN(const marginals::CrossPair pair, PairWith(task.peer(), /*low=*/true));
  return Kept(RecordsAnswer(task.peer()), false,
              [&]() -> absl::StatusOr<v1::PartyMessage> {
                ASSIGN_OR_RETURN(const secure::PaillierPrivateKey* key, PaillierKey());
                // Every peer paired with the same columns gets the same ciphertexts: each
                // sums them under its own fresh noise encryption, so encrypting once per
                // column set loses nothing and saves the slowest step.
                std::string& ciphertexts = encrypted_records_[pair.low_columns];
                if (ciphertexts.empty()) {
                  ASSIGN_OR_RETURN(
                      const secure::SlotLayout layout,
                      marginals::LowLayout(plan_, pair, key->public_key().modulus_bits()));
                  std::vector<std::vector<int32_t>> cells;
                  for (const int c : pair.low_columns) {
                    cells.push_back(marginals::PairCells(table_, own_.blocks[c - first_column_],
                                                         plan_.privacy().measurement()));
                  }
                  ASSIGN_OR_RETURN(
                      const std::vector<secure::Ciphertext> records,
                      secure::EncryptRecords(*key, layout, cells, kEncryptionThreads, &stop_));
                  ciphertexts = secure::SerializeCiphertexts(key->public_key(), records);
                }
                v1::EncryptedRecords list;
                list.set_public_key(key->public_key().Serialize());
                list.mutable_columns()->Add(pair.low_columns.begin(), pair.low_columns.end());
                list.set_ciphertexts(ciphertexts);
                v1::PartyMessage reply;
                reply.mutable_sealed_list()->set_peer(task.peer());
                ASSIGN_OR_RETURN(*reply.mutable_sealed_list()->mutable_sealed(),
                                 SealFor(task.peer(), kRecordsPurpose, list.SerializeAsString()));
                return reply;
              });
}

absl::StatusOr<v1::PartyMessage> MarginalsPartyCore::SumAnswer(const v1::MarginalsTask::Sum& task) {
  ASSIGN_OR_RETURN(const marginals::CrossPair pair, PairWith(task.peer(), /*low=*/false));
  ASSIGN_OR_RETURN(const std::string payload,
                   OpenFrom(task.peer(), kRecordsPurpose, task.sealed()));
  return Kept(
      SumsAnswer(task.peer()), true,
      [&]() -> absl::StatusOr<v1::PartyMessage> {
        v1::EncryptedRecords list;
        if (!list.ParseFromString(payload)) {
          return absl::InvalidArgumentError("the records list does not parse");
        }
        if (!std::equal(list.columns().begin(), list.columns().end(), pair.low_columns.begin(),
                        pair.low_columns.end())) {
          return absl::InvalidArgumentError(
              "the records list covers other columns than the plan pairs with this party's");
        }
        ASSIGN_OR_RETURN(const secure::PaillierPublicKey key,
                         secure::PaillierPublicKey::Deserialize(list.public_key()));
        ASSIGN_OR_RETURN(const secure::SlotLayout layout,
                         marginals::LowLayout(plan_, pair, key.modulus_bits()));
        const int64_t records = table_.size(0);
        ASSIGN_OR_RETURN(
            const std::vector<secure::Ciphertext> ciphertexts,
            secure::DeserializeCiphertexts(
                key, list.ciphertexts(), static_cast<size_t>(records) * layout.num_ciphertexts()));
        ASSIGN_OR_RETURN(SecureRandom noise, SecureRandom::FromOsEntropy());
        v1::EncryptedSums sums;
        for (const int c : pair.high_columns) {
          const OutputBlock& block = own_.blocks[c - first_column_];
          const std::vector<int32_t> values =
              marginals::PairCells(table_, block, plan_.privacy().measurement());
          const std::vector<double> sigmas =
              marginals::SlotSigmas(plan_, pair, layout, c, noiseless_);
          ASSIGN_OR_RETURN(const std::vector<secure::Ciphertext> by_value,
                           secure::SumByValue(key, layout, ciphertexts, values,
                                              plan_.columns(c).pair_width(), sigmas, noise));
          sums.add_columns(c);
          sums.add_sums(secure::SerializeCiphertexts(key, by_value));
        }
        v1::PartyMessage reply;
        reply.mutable_sealed_list()->set_peer(task.peer());
        ASSIGN_OR_RETURN(*reply.mutable_sealed_list()->mutable_sealed(),
                         SealFor(task.peer(), kSumsPurpose, sums.SerializeAsString()));
        return reply;
      });
}

std::vector<std::string> MarginalsPartyCore::HistogramLabels(const marginals::CrossPair& pair,
                                                             int high_column) const {
  std::vector<std::string> labels;
  for (const int low_column : pair.low_columns) {
    std::string label = absl::StrCat("no histogram of columns '", plan_.columns(low_column).name(),
                                     "' and '", plan_.columns(high_column).name(), "'");
    for (const int h : pair.histograms) {
      const auto& columns = plan_.measurements(h).columns();
      if (std::find(columns.begin(), columns.end(), low_column) != columns.end() &&
          std::find(columns.begin(), columns.end(), high_column) != columns.end()) {
        label = absl::StrCat("histogram ", h, " ('", plan_.columns(low_column).name(), "' x '",
                             plan_.columns(high_column).name(), "')");
      }
    }
    labels.push_back(std::move(label));
  }
  return labels;
}

absl::StatusOr<v1::PartyMessage> MarginalsPartyCore::DecryptAnswer(
    const v1::MarginalsTask::Decrypt& task) {
  ASSIGN_OR_RETURN(const marginals::CrossPair pair, PairWith(task.peer(), /*low=*/true));
  if (!std::equal(task.histograms().begin(), task.histograms().end(), pair.histograms.begin(),
                  pair.histograms.end())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the curator asks for other cross histograms with '", task.peer(),
                     "' than the attested plan's"));
  }
  ASSIGN_OR_RETURN(const std::string payload, OpenFrom(task.peer(), kSumsPurpose, task.sealed()));
  return Kept(
      CountsAnswer(task.peer()), true,
      [&]() -> absl::StatusOr<v1::PartyMessage> {
        v1::EncryptedSums sums;
        if (!sums.ParseFromString(payload) ||
            !std::equal(sums.columns().begin(), sums.columns().end(), pair.high_columns.begin(),
                        pair.high_columns.end()) ||
            sums.sums_size() != sums.columns_size()) {
          return absl::InvalidArgumentError("the sums list covers other columns than the plan's");
        }
        ASSIGN_OR_RETURN(const secure::PaillierPrivateKey* key, PaillierKey());
        ASSIGN_OR_RETURN(const secure::SlotLayout layout,
                         marginals::LowLayout(plan_, pair, key->public_key().modulus_bits()));
        ASSIGN_OR_RETURN(SecureRandom noise, SecureRandom::FromOsEntropy());
        std::vector<secure::CrossCounts> by_column;
        for (int j = 0; j < sums.columns_size(); ++j) {
          const int width = plan_.columns(sums.columns(j)).pair_width();
          ASSIGN_OR_RETURN(const std::vector<secure::Ciphertext> ciphertexts,
                           secure::DeserializeCiphertexts(
                               key->public_key(), sums.sums(j),
                               static_cast<size_t>(width) * layout.num_ciphertexts()));
          ASSIGN_OR_RETURN(
              secure::CrossCounts counts,
              secure::DecryptCounts(
                  *key, layout, ciphertexts, width, table_.size(0),
                  marginals::SlotSigmas(plan_, pair, layout, sums.columns(j), noiseless_), noise,
                  HistogramLabels(pair, sums.columns(j))));
          by_column.push_back(std::move(counts));
        }
        ASSIGN_OR_RETURN(const std::vector<int64_t> counts,
                         marginals::CrossHistogramCounts(plan_, pair, layout, by_column));
        v1::PartyMessage reply;
        reply.mutable_measured_counts()->mutable_histograms()->Add(pair.histograms.begin(),
                                                                   pair.histograms.end());
        reply.mutable_measured_counts()->mutable_counts()->Add(counts.begin(), counts.end());
        return reply;
      });
}

}  // namespace vfsynth
