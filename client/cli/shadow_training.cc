#include "client/cli/shadow_training.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/cli/in_process_curator_link.h"
#include "client/core/party_protocol_factory.h"
#include "client/core/party_session.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/split.h"
#include "common/gan/model_factory.h"
#include "common/privacy/mode_traits.h"
#include "common/privacy/run_accounting.h"
#include "server/core/curator_checkpoint.h"
#include "server/core/curator_core.h"
#include "server/core/curator_protocol_factory.h"

namespace vfsynth {
namespace {

// Loopback runs of seconds: a daemon that fails is noticed well within these.
constexpr double kJoinTimeoutSeconds = 60;
constexpr double kRoundTimeoutSeconds = 60;
constexpr double kReconnectTimeoutSeconds = 10;

// The audit's generator rounds in the GAN modes.
constexpr int kAuditRounds = 50;
// Mode marginals: G's fit steps and rows per step. The run's budget is spent once, on the
// measurement, so the fit's length costs only time; a batch of 256 estimates G's
// histograms well enough and stays within an audit's D (--audit-rows 500), which
// TrainShadowModel requires of every batch.
constexpr int kMarginalsAuditFitSteps = 300;
constexpr int kMarginalsAuditFitBatch = 256;

absl::StatusOr<v1::CuratorConfig> CuratorConfigFor(const ShadowTrainingOptions& options,
                                                   const std::vector<v1::PartyDataConfig>& parties,
                                                   uint64_t seed, const std::string& dir) {
  v1::CuratorConfig config;
  config.set_run_id(absl::StrCat("audit-", seed));
  config.set_plaintext(true);  // in process: no listener, no certificates
  for (const v1::PartyDataConfig& party : parties) config.add_parties(party.name());
  *config.mutable_model() = options.model;
  *config.mutable_training() = options.training;
  config.mutable_training()->set_seed(seed);
  *config.mutable_privacy() = options.privacy;
  config.set_checkpoint_dir(dir + "/curator");
  // A shadow run is never resumed: one checkpoint at the end instead of one per round.
  config.set_checkpoint_every(std::max(1, options.training.rounds()));
  config.set_join_timeout_seconds(kJoinTimeoutSeconds);
  config.set_round_timeout_seconds(kRoundTimeoutSeconds);
  config.set_reconnect_timeout_seconds(kReconnectTimeoutSeconds);
  RETURN_IF_ERROR(ResolveCuratorConfig("", &config));
  return config;
}

absl::StatusOr<v1::PartyConfig> PartyConfigFor(const ShadowTrainingOptions& options,
                                               const v1::PartyDataConfig& party,
                                               const std::string& secrets, const std::string& dir) {
  v1::PartyConfig config;
  config.set_name(party.name());
  config.set_curator("127.0.0.1:1");  // never dialled: the session's link is in process
  config.set_plaintext(true);
  config.set_data(party.data());
  config.set_schema(party.schema());
  config.set_secrets(secrets);
  config.set_connect_timeout_seconds(kJoinTimeoutSeconds);
  config.set_reconnect_timeout_seconds(kReconnectTimeoutSeconds);
  *config.mutable_privacy() = options.privacy;
  config.mutable_privacy()->set_ledger(absl::StrCat(dir, "/", party.name(), ".ledger"));
  config.set_checkpoint_dir(absl::StrCat(dir, "/", party.name(), ".checkpoint"));
  RETURN_IF_ERROR(ResolvePartyConfig("", &config));
  return config;
}

// The run's outcome: a party's own failure names the cause; the others then only see
// the run cancelled.
absl::Status FirstCause(const absl::Status& curator, const std::vector<absl::Status>& parties) {
  for (const absl::Status& party : parties) {
    if (!party.ok() && party.code() != absl::StatusCode::kCancelled) return party;
  }
  if (!curator.ok()) return curator;
  for (const absl::Status& party : parties) RETURN_IF_ERROR(party);
  return absl::OkStatus();
}

// The curator and every party of one shadow run, in this process, files under `dir`.
absl::StatusOr<ShadowRun> RunDaemons(const v1::Schema& schema, const ShadowTrainingOptions& options,
                                     const CsvTable& training, uint64_t seed,
                                     const std::string& dir) {
  ASSIGN_OR_RETURN(const std::vector<v1::PartyDataConfig> parties,
                   WriteShadowPartyFiles(schema, options.parties, training, dir));
  const PartySecrets secrets = ShadowRunSecrets(seed);
  const std::string secrets_path = dir + "/secrets.txt";
  RETURN_IF_ERROR(WritePrivateFile(secrets_path,
                                   absl::StrCat("sampling_secret=", secrets.sampling_secret,
                                                "\nalignment_key=", secrets.alignment_key, "\n")));
  ASSIGN_OR_RETURN(v1::CuratorConfig curator_config, CuratorConfigFor(options, parties, seed, dir));
  ASSIGN_OR_RETURN(std::string run_nonce,
                   CheckCuratorCheckpointOnStartup(curator_config, /*resume=*/false));
  CuratorCore curator(curator_config, CuratorProtocolFor(curator_config), std::move(run_nonce));
  std::vector<std::unique_ptr<PartyProtocol>> cores;
  std::vector<std::unique_ptr<PartySession>> sessions;
  for (const v1::PartyDataConfig& party : parties) {
    ASSIGN_OR_RETURN(const v1::PartyConfig config,
                     PartyConfigFor(options, party, secrets_path, dir));
    ASSIGN_OR_RETURN(std::unique_ptr<PartyProtocol> core,
                     PartyProtocolFor(config, /*resume=*/false));
    core->set_party_secret(ReferencePartySecret(seed, party.name()));
    sessions.push_back(std::make_unique<PartySession>(
        config, core.get(), std::make_unique<InProcessCuratorLink>(&curator, party.name())));
    cores.push_back(std::move(core));
  }
  std::vector<absl::Status> party_status(parties.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < parties.size(); ++k) {
    threads.emplace_back([&, k] {
      party_status[k] = sessions[k]->Run();
      if (!party_status[k].ok()) curator.Cancel(party_status[k]);
    });
  }
  const absl::Status curator_status = curator.Run();
  if (!curator_status.ok()) {
    curator.Cancel(curator_status);  // ends the waits of parties still in a call
    for (auto& session : sessions) session->Cancel();
  }
  for (std::thread& thread : threads) thread.join();
  RETURN_IF_ERROR(FirstCause(curator_status, party_status));

  ShadowRun run;
  const int64_t rows = options.synthetic_rows > 0 ? options.synthetic_rows
                                                  : static_cast<int64_t>(training.rows.size());
  ASSIGN_OR_RETURN(run.synthetic, curator.Synthesize(rows));
  run.plan = cores[0]->privacy_plan();
  for (const auto& core : cores) run.party_epsilon_spent.push_back(core->epsilon_spent());
  return run;
}

}  // namespace

ShadowTrainingOptions SmallShadowConfig(int rounds) {
  ShadowTrainingOptions options;
  v1::ModelConfig& m = options.model;
  m.set_z_dim(32);
  m.add_generator_hidden(128);
  m.add_generator_hidden(128);
  m.add_feature_hidden(64);
  m.set_feature_dim(32);
  m.add_shared_hidden(64);
  v1::TrainingConfig& t = options.training;
  t.set_rounds(rounds);
  t.set_batch_size(64);
  t.set_n_critic(2);
  t.set_threads(1);  // shadow models are many and small; intra-op threads only add overhead
  t.set_log_every(1 << 30);
  options.privacy.set_mode(v1::PrivacyConfig::none);
  return options;
}

absl::StatusOr<ShadowTrainingOptions> AuditShadowConfig(const v1::PrivacyConfig& privacy,
                                                        int rounds) {
  const bool measured = privacy.mode() == v1::PrivacyConfig::marginals;
  const int default_rounds = measured ? kMarginalsAuditFitSteps : kAuditRounds;
  ShadowTrainingOptions options = SmallShadowConfig(rounds >= 0 ? rounds : default_rounds);
  options.privacy = privacy;
  // Mode none runs what dpsgd and strict add by default (the marginal release, its pairs,
  // the prior), exact: none against a DP mode then differs only in the noise. Without them
  // a target rare in D leaves no trace G learns within a shadow run's rounds.
  if (!privacy::TraitsOf(privacy.mode()).draws_noise()) {
    RETURN_IF_ERROR(SetMarginalReleaseDefaults(/*prior=*/true, &options.training));
  }
  if (measured) {
    // A fit has no critics, whose settings the mode refuses.
    options.model.clear_feature_hidden();
    options.model.clear_feature_dim();
    options.model.clear_shared_hidden();
    options.training.clear_n_critic();
    options.training.set_batch_size(kMarginalsAuditFitBatch);
  }
  return options;
}

absl::StatusOr<v1::PrivacyConfig> ShadowPrivacy(const std::string& mode, double epsilon,
                                                double delta) {
  ASSIGN_OR_RETURN(const privacy::Mode parsed, privacy::ParseMode(mode));
  v1::PrivacyConfig config;
  config.set_mode(parsed);
  config.set_delta(delta);
  if (!privacy::TraitsOf(parsed).draws_noise()) {
    if (epsilon != 0) {
      return absl::InvalidArgumentError(
          "--epsilon needs a DP mode (--privacy dpsgd, strict, ...); mode none trains without DP");
    }
    return config;
  }
  if (!(epsilon > 0) || !std::isfinite(epsilon)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--privacy ", mode,
                     " needs --epsilon E > 0 (the budget the run's noise is calibrated to)"));
  }
  config.set_epsilon(epsilon);
  return config;
}

absl::StatusOr<std::vector<v1::PartyDataConfig>> WriteShadowPartyFiles(const v1::Schema& schema,
                                                                       v1::PartiesFile parties,
                                                                       const CsvTable& training,
                                                                       const std::string& dir) {
  if (parties.parties_size() == 0) {
    v1::PartySpec* all = parties.add_parties();
    all->set_name("all");
    for (const v1::Column& column : schema.columns()) all->add_columns(column.name());
  }
  ASSIGN_OR_RETURN(const SplitResult split, SplitTable(training, schema, parties));
  std::vector<v1::PartyDataConfig> files;
  for (const PartyTable& party : split.parties) {
    v1::PartyDataConfig& f = files.emplace_back();
    f.set_name(party.name);
    f.set_data(absl::StrCat(dir, "/", party.name, ".csv"));
    f.set_schema(absl::StrCat(dir, "/", party.name, ".schema.json"));
    RETURN_IF_ERROR(WriteCsv(f.data(), party.table));
    ASSIGN_OR_RETURN(const std::string schema_json, ToJson(party.schema));
    RETURN_IF_ERROR(WriteFileAtomically(f.schema(), schema_json));
  }
  return files;
}

PartySecrets ShadowRunSecrets(uint64_t seed) {
  // At least kMinSecretBytes (32) whatever the seed.
  return {absl::StrCat("vfsynth-audit-shadow-run-sampling-secret/", seed),
          absl::StrCat("vfsynth-audit-shadow-run-alignment-key/", seed)};
}

absl::StatusOr<ShadowRun> TrainShadowModel(const v1::Schema& schema,
                                           const ShadowTrainingOptions& options,
                                           const CsvTable& training, uint64_t seed) {
  if (static_cast<int64_t>(training.rows.size()) < options.training.batch_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a shadow model would train on ", training.rows.size(),
                     " records, fewer than its batch size ", options.training.batch_size()));
  }
  const std::string dir = absl::StrCat(options.work_dir, "/shadow_", seed);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);  // a crashed audit's leftovers
  RETURN_IF_ERROR(MakeDirectories(dir));
  absl::StatusOr<ShadowRun> run = RunDaemons(schema, options, training, seed, dir);
  std::filesystem::remove_all(dir, ignored);
  return run;
}

SyntheticSampler MakeShadowSampler(const v1::Schema& schema, ShadowTrainingOptions options,
                                   std::function<void(const ShadowRun&)> on_run) {
  return [schema, options = std::move(options), on_run = std::move(on_run)](
             const CsvTable& training, uint64_t seed) -> absl::StatusOr<CsvTable> {
    ASSIGN_OR_RETURN(ShadowRun run, TrainShadowModel(schema, options, training, seed));
    if (on_run) on_run(run);
    return std::move(run.synthetic);
  };
}

}  // namespace vfsynth
