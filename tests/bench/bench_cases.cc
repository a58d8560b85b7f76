#include "tests/bench/bench_cases.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"

namespace vfsynth::bench {
namespace {

v1::PrivacyConfig BenchPrivacy(const std::string& mode, const std::string& ledger) {
  v1::PrivacyConfig privacy;
  v1::PrivacyConfig::Mode parsed = v1::PrivacyConfig::MODE_UNSPECIFIED;
  v1::PrivacyConfig::Mode_Parse(mode, &parsed);  // bench_main admits none, dpsgd, strict
  privacy.set_mode(parsed);                        // and marginals
  if (parsed == v1::PrivacyConfig::none) return privacy;
  if (!ledger.empty()) privacy.set_ledger(ledger);
  if (parsed == v1::PrivacyConfig::marginals) {
    privacy.set_epsilon(1.0);  // measurement costs do not depend on it either
    return privacy;
  }
  // A fixed noise multiplier and a budget that never refuses: the cost of DP-SGD and
  // of the strict feature release does not depend on the noise level.
  privacy.set_noise_multiplier(1.0);
  privacy.set_epsilon(1e9);
  return privacy;
}

}  // namespace

std::string BenchCase::name() const {
  return absl::StrCat(preset == "default" ? "" : preset + "-", "k", parties, "-b", batch, "-",
                      mode);
}

std::vector<BenchCase> MakeGrid(const std::vector<int>& parties, const std::vector<int>& batches,
                                const std::vector<std::string>& modes,
                                const std::vector<std::string>& vflgan_modes) {
  std::vector<BenchCase> cases;
  for (const std::string& mode : vflgan_modes) cases.push_back({"vflgan", 2, 64, mode});
  for (int k : parties) {
    for (int b : batches) {
      for (const std::string& mode : modes) cases.push_back({"default", k, b, mode});
    }
  }
  return cases;
}

v1::ModelConfig BenchModel(const std::string& preset) {
  v1::ModelConfig model;
  if (preset == "vflgan") {
    // VFLGAN's Adult code: G_k 20-32-64-128-d_k per party, feat_k d_k-256-128,
    // head_k 128-1, D_s 256-128-1 (seed-003 §3.4).
    model.set_z_dim(20);
    for (int h : {32, 64, 128}) model.add_generator_hidden(h);
    model.mutable_experimental()->set_generator_towers(v1::ExperimentalModelConfig::per_party);
    model.add_feature_hidden(256);
    model.set_feature_dim(128);
    model.add_shared_hidden(128);
  }
  return model;  // other fields: the documented defaults
}

v1::TrainingConfig BenchTraining(const BenchCase& c, const RunSettings& s, int threads) {
  v1::TrainingConfig training;
  training.set_batch_size(c.batch);
  training.set_rounds(s.rounds);
  if (c.mode != "marginals") training.set_n_critic(s.n_critic);  // a fit has no critics
  training.set_seed(7);
  training.set_threads(threads);
  training.set_log_every(1000000);
  if (c.mode == "marginals") training.set_label_column("class");  // label pairs measured too
  return training;
}

absl::StatusOr<v1::LocalRunConfig> ReferenceConfig(const BenchCase& c, const RunSettings& s,
                                                   const Fixture& f) {
  v1::LocalRunConfig config;
  config.set_run_id("bench-reference");
  for (size_t k = 0; k < f.names.size(); ++k) {
    v1::PartyDataConfig* party = config.add_parties();
    party->set_name(f.names[k]);
    party->set_data(f.data[k]);
    party->set_schema(f.schemas[k]);
  }
  *config.mutable_model() = BenchModel(c.preset);
  *config.mutable_training() = BenchTraining(c, s, s.reference_threads);
  config.set_sampling_secret(f.sampling_secret);
  config.set_alignment_key(f.alignment_key);
  RETURN_IF_ERROR(ResolveLocalRunConfig("", &config));
  return config;
}

absl::StatusOr<v1::CuratorConfig> CuratorConfigFor(const BenchCase& c, const RunSettings& s,
                                                   const Fixture& f) {
  v1::CuratorConfig config;
  config.set_run_id(absl::StrCat("bench-", c.name()));
  config.set_listen("127.0.0.1:0");
  config.mutable_tls()->set_ca(f.certs + "/ca.crt");
  config.mutable_tls()->set_cert(f.certs + "/curator.crt");
  config.mutable_tls()->set_key(f.certs + "/curator.key");
  for (const std::string& name : f.names) config.add_parties(name);
  *config.mutable_model() = BenchModel(c.preset);
  *config.mutable_training() = BenchTraining(c, s, s.curator_threads);
  *config.mutable_privacy() = BenchPrivacy(c.mode, "");
  config.set_checkpoint_dir(s.dir + "/curator");
  config.set_join_timeout_seconds(120);
  config.set_round_timeout_seconds(300);
  RETURN_IF_ERROR(ResolveCuratorConfig("", &config));
  return config;
}

absl::StatusOr<v1::PartyConfig> PartyConfigFor(const BenchCase& c, const RunSettings& s,
                                               const Fixture& f, int party,
                                               const std::string& curator) {
  const std::string& name = f.names[party];
  v1::PartyConfig config;
  config.set_name(name);
  config.set_curator(curator);
  config.mutable_tls()->set_ca(f.certs + "/ca.crt");
  config.mutable_tls()->set_cert(f.certs + "/" + name + ".crt");
  config.mutable_tls()->set_key(f.certs + "/" + name + ".key");
  config.set_data(f.data[party]);
  config.set_schema(f.schemas[party]);
  config.set_secrets(f.secrets);
  config.set_threads(s.party_threads);
  config.set_checkpoint_dir(s.dir + "/" + name);
  *config.mutable_privacy() = BenchPrivacy(c.mode, s.dir + "/" + name + ".ledger");
  config.set_connect_timeout_seconds(60);
  RETURN_IF_ERROR(ResolvePartyConfig("", &config));
  return config;
}

}  // namespace vfsynth::bench
