// In-process curator and parties over loopback mTLS: numerical equivalence with the
// reference trainer, authentication and authorisation, what crosses the wire.
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/core/party_session.h"
#include "client/core/party_protocol.h"
#include "client/core/vertical_party_core.h"
#include "client/grpc/grpc_curator_link.h"
#include "client/grpc/party_daemon.h"
#include "client/grpc/status_client.h"
#include "common/base/file_io.h"
#include "common/base/proto_json.h"
#include "common/config/config.h"
#include "common/data/psi.h"
#include "common/data/schema.h"
#include "common/data/split.h"
#include "common/gan/curator_model.h"
#include "common/gan/model_factory.h"
#include "common/gan/party_model.h"
#include "common/gan/reference_trainer.h"
#include "common/net/tls.h"
#include "common/privacy/privacy_plan.h"
#include "common/protocol/protocol_version.h"
#include "server/core/generator_artefact.h"
#include "server/core/generator_synthesis.h"
#include "server/core/released_statistics.h"
#include "server/core/vertical_rounds.h"
#include "server/grpc/curator_server.h"
#include "tests/integration/party_sessions.h"
#include "vfsynth/v1/curator.grpc.pb.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// The vertical run's generator and critic (the model its protocol trains).
CuratorModel* CuratorModelOf(CuratorCore& core) {
  return static_cast<VerticalRounds&>(core.protocol()).model_for_testing();
}

const std::string kSource = VFSYNTH_SOURCE_DIR;
const std::vector<std::string> kParties = {"hospital", "insurer", "bank"};
constexpr char kSamplingSecret[] = "test-sampling-secret-0123456789abcdef";
constexpr char kAlignmentKey[] = "test-alignment-key-0123456789abcdef";

class DistributedTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    // Per process: two checkouts (or two ctest runs) must not share certificates or checkpoints.
    dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/distributed_test_", ::getpid()));
    ASSERT_TRUE(SplitFiles(std::string(VFSYNTH_DATASETS_DIR) + "/adult.csv",
                           kSource + "/deploy/schemas/adult.schema.json",
                           kSource + "/deploy/parties/adult-3.json", *dir_ + "/parties", false)
                    .ok());
    const std::string certs = "bash " + kSource + "/deploy/gen-certs.sh ";
    ASSERT_EQ(
        std::system((certs + *dir_ + "/certs hospital insurer bank mallory > /dev/null").c_str()),
        0);
    ASSERT_EQ(std::system((certs + *dir_ + "/other-ca hospital > /dev/null").c_str()), 0);
    WriteSecrets("secrets.txt", kSamplingSecret, kAlignmentKey);
  }

  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete dir_;
    dir_ = nullptr;
  }

  // A secrets file `name` under the suite's directory; its path.
  static std::string WriteSecrets(const std::string& name, const std::string& sampling_secret,
                                  const std::string& alignment_key) {
    const std::string path = *dir_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomically(path, absl::StrCat("sampling_secret=", sampling_secret,
                                                       "\nalignment_key=", alignment_key, "\n"))
                    .ok());
    return path;
  }

  static v1::TrainingConfig Training() {
    v1::TrainingConfig t;
    t.set_batch_size(64);
    t.set_n_critic(2);
    t.set_rounds(3);
    t.set_seed(11);
    t.set_threads(1);
    t.set_log_every(1);
    return t;
  }

  static v1::TlsConfig Tls(const std::string& ca_dir, const std::string& name) {
    v1::TlsConfig tls;
    tls.set_ca(*dir_ + "/" + ca_dir + "/ca.crt");
    tls.set_cert(*dir_ + "/" + ca_dir + "/" + name + ".crt");
    tls.set_key(*dir_ + "/" + ca_dir + "/" + name + ".key");
    return tls;
  }

  static std::string LedgerPath(const std::string& party) {
    return CheckpointDir(party) + ".ledger";
  }

 protected:
  // Checkpoints of the current test (removed when its curator starts).
  static std::string CheckpointDir(const std::string& daemon) {
    return *dir_ + "/checkpoints/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/" + daemon;
  }

  // The test's curator config, resolved: loopback mTLS, the three parties.
  static v1::CuratorConfig CuratorConfigFor(
      double join_timeout, const v1::PrivacyConfig& privacy = {},
      const std::string& metrics_listen = "", const v1::TrainingConfig& training = Training(),
      const v1::OutputConfig& output = {}) {
    v1::CuratorConfig config;
    config.set_checkpoint_dir(CheckpointDir("curator"));
    config.set_run_id("it-run");
    config.set_listen("127.0.0.1:0");
    *config.mutable_tls() = Tls("certs", "curator");
    for (const auto& p : kParties) config.add_parties(p);
    *config.mutable_training() = training;
    *config.mutable_output() = output;
    config.set_join_timeout_seconds(join_timeout);
    *config.mutable_privacy() = privacy;
    if (!privacy.has_mode()) config.mutable_privacy()->set_mode(v1::PrivacyConfig::none);
    config.set_round_timeout_seconds(60);
    if (!metrics_listen.empty()) config.set_metrics_listen(metrics_listen);
    EXPECT_TRUE(ResolveCuratorConfig("", &config).ok());
    return config;
  }

  static std::unique_ptr<CuratorServer> StartCurator(
      double join_timeout, const v1::PrivacyConfig& privacy = {},
      const std::string& metrics_listen = "", const v1::TrainingConfig& training = Training(),
      const v1::OutputConfig& output = {}) {
    const auto test_dir = std::filesystem::path(CheckpointDir("curator")).parent_path();
    std::filesystem::remove_all(test_dir);
    std::filesystem::create_directories(test_dir);
    auto server = CuratorServer::BuildAndStart(
        {CuratorConfigFor(join_timeout, privacy, metrics_listen, training, output)});
    EXPECT_TRUE(server.ok()) << server.status();
    return std::move(*server);
  }

  static v1::PartyConfig PartyConfigFor(const std::string& name, int port,
                                        const v1::PrivacyConfig& privacy = {}) {
    v1::PartyConfig config;
    config.set_checkpoint_dir(CheckpointDir(name));
    config.set_name(name);
    config.set_curator(absl::StrCat("127.0.0.1:", port));
    *config.mutable_tls() = Tls("certs", name);
    config.set_data(*dir_ + "/parties/" + name + ".csv");
    config.set_schema(*dir_ + "/parties/" + name + ".schema.json");
    config.set_secrets(*dir_ + "/secrets.txt");
    config.set_connect_timeout_seconds(20);
    *config.mutable_privacy() = privacy;
    if (!privacy.has_mode()) config.mutable_privacy()->set_mode(v1::PrivacyConfig::none);
    if (privacy.has_mode() && privacy.mode() != v1::PrivacyConfig::none) {
      config.mutable_privacy()->set_ledger(CheckpointDir(name) + ".ledger");
    }
    EXPECT_TRUE(ResolvePartyConfig("", &config).ok());
    return config;
  }

  static grpc::Status TryRegister(v1::Curator::Stub& stub, const std::string& claimed) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::RegisterRequest request;
    request.set_party(claimed);
    request.set_protocol_version(kProtocolVersion);
    v1::RegisterResponse response;
    return stub.Register(&context, request, &response);
  }

  static std::string* dir_;
};

std::string* DistributedTest::dir_ = nullptr;

double MaxAbsDiff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, (a[i] - b[i]).abs().max().item<double>());
  return diff;
}

TEST_F(DistributedTest, MtlsRunEqualsReferenceTrainerAndRefusesIntruders) {
  auto curator = StartCurator(300);
  const int port = curator->port();
  InboundRecorder recorder(curator->core().hub());
  absl::Status run_status;
  std::thread run([&] { run_status = curator->Run(); });

  // Intruders, while the curator waits for its parties; none may disturb the run.
  {
    auto status = TryRegister(*CuratorStub(port, Tls("other-ca", "hospital")), "hospital");
    EXPECT_FALSE(status.ok()) << "certificate from another CA accepted";
    v1::TlsConfig no_cert;  // trusts the CA but presents no client certificate
    no_cert.set_ca(*dir_ + "/certs/ca.crt");
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = *ReadFile(no_cert.ca());
    auto anonymous = v1::Curator::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::SslCredentials(options)));
    status = TryRegister(*anonymous, "hospital");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    status = TryRegister(*CuratorStub(port, Tls("certs", "mallory")), "mallory");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_THAT(status.error_message(), HasSubstr("no party of the roster"));
    status = TryRegister(*CuratorStub(port, Tls("certs", "hospital")), "bank");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_THAT(status.error_message(), HasSubstr("claims to be 'bank'"));
  }

  std::vector<std::unique_ptr<VerticalPartyCore>> cores;
  for (size_t k = 0; k < kParties.size(); ++k) {
    auto core = VerticalPartyCore::Create(PartyConfigFor(kParties[k], port));
    ASSERT_TRUE(core.ok()) << core.status();
    // The party secret the reference gives this party: the same starting networks.
    (*core)->set_party_secret(ReferencePartySecret(Training().seed(), kParties[k]));
    cores.push_back(std::move(*core));
  }
  const std::vector<absl::Status> results =
      RunPartySessions(cores, [&](size_t k) { return PartyConfigFor(kParties[k], port); });
  run.join();
  ASSERT_TRUE(run_status.ok()) << run_status;
  for (size_t k = 0; k < kParties.size(); ++k)
    EXPECT_TRUE(results[k].ok()) << kParties[k] << ": " << results[k];

  // The single-process reference with the same seeds and secrets.
  v1::LocalRunConfig local;
  for (const auto& p : kParties) {
    auto* party = local.add_parties();
    party->set_name(p);
    party->set_data(*dir_ + "/parties/" + p + ".csv");
    party->set_schema(*dir_ + "/parties/" + p + ".schema.json");
  }
  *local.mutable_training() = Training();
  local.set_sampling_secret(kSamplingSecret);
  local.set_alignment_key(kAlignmentKey);
  ASSERT_TRUE(ResolveLocalRunConfig("", &local).ok());
  auto reference = ReferenceTrainer::Create(local);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_TRUE((*reference)->Train().ok());

  CuratorModel* model = CuratorModelOf(curator->core());
  ASSERT_NE(model, nullptr);
  EXPECT_LE(MaxAbsDiff(model->generator()->parameters(), (*reference)->generator()->parameters()),
            1e-5);
  EXPECT_LE(
      MaxAbsDiff(model->shared_critic()->parameters(), (*reference)->shared_critic()->parameters()),
      1e-5);
  for (size_t k = 0; k < kParties.size(); ++k) {
    EXPECT_LE(MaxAbsDiff(cores[k]->model()->feat()->parameters(),
                         (*reference)->parties()[k].feat->parameters()),
              1e-5)
        << kParties[k];
    EXPECT_LE(MaxAbsDiff(cores[k]->model()->head()->parameters(),
                         (*reference)->parties()[k].head->parameters()),
              1e-5)
        << kParties[k];
  }

  // What crossed the wire from parties: only features and slice gradients of the
  // expected shapes (never a d_k-wide real row, never an id).
  const auto& t = Training();
  const int64_t steps = static_cast<int64_t>(t.rounds()) * (t.n_critic() + 2);
  EXPECT_EQ(curator->core().Status().state(), v1::finished);
  const std::vector<v1::PartyMessage> inbound = recorder.messages();
  EXPECT_EQ(static_cast<int64_t>(inbound.size()), static_cast<int64_t>(kParties.size()) * steps);
  std::set<int> payloads;
  for (const v1::PartyMessage& m : inbound) {
    payloads.insert(m.payload_case());
    EXPECT_EQ(m.run_id(), "it-run");
    switch (m.payload_case()) {
      case v1::PartyMessage::kFeatures:
        EXPECT_EQ(m.features().h_real().shape(1), local.model().feature_dim());  // d_h
        EXPECT_EQ(m.features().h_fake().shape(1), local.model().feature_dim());
        break;
      case v1::PartyMessage::kGeneratorFeatures:
        EXPECT_EQ(m.generator_features().h().shape(1), local.model().feature_dim());
        break;
      case v1::PartyMessage::kSliceGradient:
        EXPECT_EQ(m.slice_gradient().grad().shape(0), t.batch_size());
        break;
      default:
        ADD_FAILURE() << "unexpected payload " << m.payload_case();
    }
  }
  EXPECT_EQ(payloads.size(), 3u);
  // Register carries only the public schema and a count; Align only points blinded by
  // each party's own secret: the parties hold mostly the same people, yet no element of
  // one party's list appears in another's.
  const v1::RegisterRequest reg = cores[0]->MakeRegisterRequest();
  EXPECT_TRUE(reg.schema().id_column().empty());
  std::set<std::string> seen;
  size_t elements = 0;
  for (const auto& core : cores) {
    const absl::StatusOr<v1::AlignRequest> align = core->MakeAlignRequest();
    ASSERT_TRUE(align.ok()) << align.status();
    EXPECT_EQ(align->hop(), 0u);
    for (const std::string& element : align->elements()) {
      EXPECT_EQ(element.size(), kPsiElementBytes);
      seen.insert(element);
      ++elements;
    }
  }
  EXPECT_EQ(seen.size(), elements);
  EXPECT_EQ(cores[0]->MakeAlignRequest()->elements_size(), reg.rows());
}

// Runs curator + parties in-process; returns the curator's and parties' outcomes.
struct RunOutcome {
  absl::Status curator;
  std::vector<absl::Status> parties;
  v1::StatusResponse status;
  std::vector<double> party_epsilon_spent, party_epsilon_planned;
};

// `after_run` (optional) sees the curator after the run, before it shuts down.
RunOutcome RunAll(std::unique_ptr<CuratorServer> curator,
                  const std::function<v1::PartyConfig(const std::string&, int)>& party_config,
                  const std::function<void(CuratorServer&)>& after_run = nullptr) {
  RunOutcome outcome;
  outcome.parties.resize(kParties.size());
  outcome.party_epsilon_spent.resize(kParties.size());
  outcome.party_epsilon_planned.resize(kParties.size());
  const int port = curator->port();
  std::thread run([&] { outcome.curator = curator->Run(); });
  std::vector<std::thread> threads;
  for (size_t k = 0; k < kParties.size(); ++k) {
    threads.emplace_back([&, k] {
      const v1::PartyConfig config = party_config(kParties[k], port);
      auto core = VerticalPartyCore::Create(config);
      if (!core.ok()) {
        outcome.parties[k] = core.status();
        return;
      }
      PartySession session(config, core->get(), std::make_unique<GrpcCuratorLink>(config));
      outcome.parties[k] = session.Run();
      outcome.party_epsilon_spent[k] = (*core)->epsilon_spent();
      outcome.party_epsilon_planned[k] = (*core)->epsilon_planned();
    });
  }
  for (auto& t : threads) t.join();
  run.join();
  outcome.status = curator->core().Status();
  if (after_run) after_run(*curator);
  return outcome;
}

// The run completed; every party calibrated its noise to `budget`, charged each release
// once and spent it all by the end, and the curator reports the same.
void ExpectBudgetSpentExactly(const RunOutcome& outcome, double budget) {
  ASSERT_TRUE(outcome.curator.ok()) << outcome.curator;
  for (size_t k = 0; k < kParties.size(); ++k) {
    ASSERT_TRUE(outcome.parties[k].ok()) << kParties[k] << ": " << outcome.parties[k];
    EXPECT_NEAR(outcome.party_epsilon_planned[k], budget, 1e-3);
    EXPECT_NEAR(outcome.party_epsilon_spent[k], outcome.party_epsilon_planned[k], 1e-6);
  }
  EXPECT_NEAR(outcome.status.epsilon_spent(), budget, 1e-3);
  EXPECT_NEAR(outcome.status.epsilon_planned(), budget, 1e-3);
}

// The charge lines of a party's ledger, in order.
std::vector<std::string> LedgerCharges(const std::string& party) {
  absl::StatusOr<std::string> ledger = ReadFile(DistributedTest::LedgerPath(party));
  EXPECT_TRUE(ledger.ok()) << ledger.status();
  std::vector<std::string> charges;
  if (!ledger.ok()) return charges;
  for (absl::string_view line : absl::StrSplit(*ledger, '\n')) {
    if (absl::StartsWith(line, "charge\t")) charges.emplace_back(line);
  }
  return charges;
}

TEST_F(DistributedTest, StrictRunSpendsExactlyThePlannedEpsilon) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::strict);
  privacy.set_epsilon(8.0);
  auto outcome = RunAll(StartCurator(300, privacy), [&](const std::string& name, int port) {
    return PartyConfigFor(name, port, privacy);
  });
  ASSERT_NO_FATAL_FAILURE(ExpectBudgetSpentExactly(outcome, 8.0));
  EXPECT_EQ(outcome.status.privacy_mode(), v1::PrivacyConfig::strict);
}

// With the marginal loss on, each party's one-off marginal release is charged first
// (ledger key 0, unsampled) and the run still spends exactly its budget.
TEST_F(DistributedTest, MarginalReleaseIsChargedFirstAndWithinTheBudget) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::strict);
  privacy.set_epsilon(8.0);
  v1::TrainingConfig training = Training();
  training.set_marginal_weight(1.0);
  training.mutable_experimental()->set_marginal_pair_cells(
      64);  // 2-way histograms share the one release and its charge
  auto outcome = RunAll(
      StartCurator(300, privacy, "", training),
      [&](const std::string& name, int port) { return PartyConfigFor(name, port, privacy); });
  ASSERT_NO_FATAL_FAILURE(ExpectBudgetSpentExactly(outcome, 8.0));
  for (size_t k = 0; k < kParties.size(); ++k) {
    const std::vector<std::string> charges = LedgerCharges(kParties[k]);
    const v1::TrainingConfig t = Training();
    ASSERT_EQ(charges.size(), 1u + t.rounds() * t.n_critic());
    EXPECT_TRUE(absl::StrContains(charges[0], "\tround=0\t")) << charges[0];
    EXPECT_TRUE(absl::StrContains(charges[0], "\tq=1\t")) << charges[0];
    EXPECT_TRUE(absl::StrContains(charges[1], "\tround=1\t")) << charges[1];
  }
}

// The run's training with the marginal release and label pairs for `class`.
v1::TrainingConfig WithLabelPairs() {
  v1::TrainingConfig training = DistributedTest::Training();
  training.set_marginal_weight(1.0);
  training.set_label_column("class");
  return training;
}

// Label pairs over mTLS: the holder's labels and the other parties' tables are released
// once, before training, under the marginal release's ledger charge (key 0: every
// party's marginals, the two other parties' tables and the labels), the curator's G gets
// the target, and the run still spends exactly its budget. A second session of a party
// sends the kept release again, byte for byte.
// The same run's published table is scored against the released statistics (every
// party's marginals, the label pairs) with no charge beyond the key-0 one.
TEST_F(DistributedTest, LabelPairsAreReleasedOnceUnderTheMarginalCharge) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::strict);
  privacy.set_epsilon(8.0);
  const v1::TrainingConfig training = WithLabelPairs();
  v1::OutputConfig output;
  const std::string table =
      (std::filesystem::path(CheckpointDir("curator")).parent_path() / "synthetic.csv").string();
  output.set_synthetic_csv(table);
  output.set_rows(300);
  std::vector<std::string> kept(kParties.size());
  bool has_target = false;
  auto outcome = RunAll(
      StartCurator(300, privacy, "", training, output),
      [&](const std::string& name, int port) { return PartyConfigFor(name, port, privacy); },
      [&](CuratorServer& curator) {
        has_target = CuratorModelOf(curator.core())->has_label_pair_target();
      });
  ASSERT_NO_FATAL_FAILURE(ExpectBudgetSpentExactly(outcome, 8.0));
  EXPECT_TRUE(has_target);
  for (size_t k = 0; k < kParties.size(); ++k) {
    const bool holder = kParties[k] == "bank";  // deploy/parties/adult-3.json gives it the class
    const std::string release =
        CheckpointDir(kParties[k]) + (holder ? "/labels.release" : "/label_pairs.release");
    absl::StatusOr<std::string> bytes = ReadFile(release);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_FALSE(bytes->empty());
    const std::vector<std::string> charges = LedgerCharges(kParties[k]);
    const v1::TrainingConfig t = Training();
    ASSERT_EQ(charges.size(), 1u + t.rounds() * t.n_critic());
    // Key 0: 3 marginal releases + 2 label-pair tables (five Gaussians) and the labels'
    // randomized response at the run's label epsilon.
    const size_t z_start = charges[0].find("\tz=") + 3;
    const std::string z_list = charges[0].substr(z_start, charges[0].find('\t', z_start) - z_start);
    EXPECT_EQ(std::count(z_list.begin(), z_list.end(), ',') + 1, 5) << charges[0];
    const size_t rr_start = charges[0].find("\trr=");
    ASSERT_NE(rr_start, std::string::npos) << charges[0];
    double rr = 0;
    ASSERT_TRUE(absl::SimpleAtod(
        charges[0].substr(rr_start + 4, charges[0].find('\t', rr_start + 1) - rr_start - 4), &rr))
        << charges[0];
    v1::PrivacyConfig resolved = privacy;  // delta's default, as the daemons resolve it
    ASSERT_TRUE(ResolvePrivacyConfig(&resolved).ok());
    EXPECT_NEAR(rr, LabelEpsilon(resolved, training), 1e-12) << charges[0];
  }

  v1::ReleasedFidelity report;
  ASSERT_TRUE(LoadJsonFile(ReleasedFidelityPath(table), &report).ok());
  EXPECT_EQ(report.records(), outcome.status.aligned_records());
  std::map<std::string, std::set<std::string>> kinds;  // per kind: the parties that released one
  for (const auto& histogram : report.histograms()) {
    kinds[histogram.kind()].insert(histogram.party());
    EXPECT_GE(histogram.distance(), 0.0);
    EXPECT_LE(histogram.distance(), 1.0);
    EXPECT_GT(histogram.noise_distance(), 0.0) << histogram.histogram();
    if (histogram.kind() == "label_pair") {
      EXPECT_TRUE(absl::StartsWith(histogram.histogram(), "class x ")) << histogram.histogram();
    }
  }
  EXPECT_EQ(kinds["marginal"], std::set<std::string>(kParties.begin(), kParties.end()));
  EXPECT_EQ(kinds["label_pair"], (std::set<std::string>{"hospital", "insurer"}));
  EXPECT_EQ(report.label_dependence_size(),
            std::count_if(report.histograms().begin(), report.histograms().end(),
                          [](const auto& h) { return h.kind() == "label_pair"; }));
  EXPECT_GT(report.score(), 0.0);
  EXPECT_LE(report.score(), 1.0);
  EXPECT_GT(report.noise_floor(), 0.0);
}

// Every record of a saved module (nested archives joined with '.') and its element count.
void CollectRecords(torch::serialize::InputArchive& archive, const std::string& prefix,
                    std::map<std::string, int64_t>& records) {
  for (const std::string& key : archive.keys()) {
    torch::Tensor tensor;
    torch::serialize::InputArchive child;
    if (archive.try_read(key, tensor) || archive.try_read(key, tensor, /*is_buffer=*/true)) {
      records[prefix + key] = tensor.numel();
    } else if (archive.try_read(key, child)) {
      CollectRecords(child, prefix + key + ".", records);
    }
  }
}

std::map<std::string, int64_t> ModuleRecords(torch::nn::Module& module) {
  std::map<std::string, int64_t> records;
  for (const auto& item : module.named_parameters()) records[item.key()] = item.value().numel();
  for (const auto& item : module.named_buffers()) records[item.key()] = item.value().numel();
  return records;
}

// A dpsgd run's publishable generator artefact redraws the table the curator
// publishes, row for row, with nothing else (`vfsynth synthesize`). It holds the
// published G alone: no record of D_s or of an optimiser. The private checkpoint
// beside it is refused there, naming the artefact.
TEST_F(DistributedTest, DpsgdGeneratorArtefactRedrawsThePublishedTable) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::dpsgd);
  privacy.set_epsilon(8.0);
  v1::OutputConfig output;
  output.set_label_column("class");
  std::optional<absl::StatusOr<CsvTable>> published;
  std::map<std::string, int64_t> published_generator;
  v1::CuratorConfig config;
  auto log = std::make_shared<std::ostringstream>();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*log);
  spdlog::default_logger()->sinks().push_back(sink);
  auto outcome = RunAll(
      StartCurator(300, privacy, "", Training(), output),
      [&](const std::string& name, int port) { return PartyConfigFor(name, port, privacy); },
      [&](CuratorServer& curator) {
        published = curator.core().Synthesize(300);
        config = curator.core().config();
        published_generator = ModuleRecords(*CuratorModelOf(curator.core())->published_generator());
      });
  ASSERT_TRUE(outcome.curator.ok()) << outcome.curator;
  ASSERT_TRUE(published.has_value() && published->ok());
  spdlog::default_logger()->sinks().pop_back();
  // dpsgd: D_s's loss is a function of clean real features; it is not published, nor
  // logged beside the progress.
  EXPECT_FALSE(outcome.status.has_critic_loss());
  EXPECT_THAT(log->str(), AllOf(HasSubstr(absl::StrCat("round ", Training().rounds(), "/")),
                                Not(HasSubstr("critic_loss"))));
  EXPECT_THAT(FormatStatusReport(outcome.status), Not(HasSubstr("critic loss")));
  EXPECT_EQ(config.output().label_temperature(), kDefaultLabelTemperature);

  const std::string path = CheckpointDir("curator") + "/generator.vfsg";
  EXPECT_EQ(GeneratorArtefactPath(config), path);
  absl::StatusOr<GeneratorArtefact> artefact = ReadGeneratorArtefact(path);
  ASSERT_TRUE(artefact.ok()) << artefact.status();
  EXPECT_EQ(artefact->header.run_id(), config.run_id());
  EXPECT_EQ(artefact->header.round(), Training().rounds());
  ASSERT_EQ(artefact->header.parties_size(), static_cast<int>(kParties.size()));
  for (size_t k = 0; k < kParties.size(); ++k)
    EXPECT_EQ(artefact->header.parties(k).name(), kParties[k]);
  v1::OutputConfig publication = artefact->header.output();
  EXPECT_EQ(publication.label_column(), "class");
  EXPECT_EQ(publication.label_temperature(), kDefaultLabelTemperature);
  EXPECT_EQ(publication.rows(), outcome.status.aligned_records());
  publication.set_rows(300);
  auto redrawn = SynthesizeFromGenerator(*artefact, publication);
  ASSERT_TRUE(redrawn.ok()) << redrawn.status();
  EXPECT_EQ(redrawn->header, (*published)->header);
  EXPECT_EQ(redrawn->rows, (*published)->rows);

  torch::serialize::InputArchive archive;
  archive.load_from(artefact->payload.data(), artefact->payload.size());
  std::map<std::string, int64_t> records;
  CollectRecords(archive, "", records);
  std::map<std::string, int64_t> expected;
  for (const auto& [name, size] : published_generator) expected["generator." + name] = size;
  EXPECT_EQ(records, expected);
  for (const char* private_record : {"shared_critic", "generator_optimizer", "shared_optimizer"}) {
    torch::serialize::InputArchive ignored;
    EXPECT_FALSE(archive.try_read(private_record, ignored)) << private_record;
  }
  const absl::StatusOr<std::string> checkpoint =
      ReadFile(CheckpointDir("curator") + "/curator.ckpt");
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_LT(artefact->payload.size() * 2, checkpoint->size());

  publication.set_rows(kMaxSynthesisRows + 1);
  EXPECT_EQ(SynthesizeFromGenerator(*artefact, publication).status().code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status refused =
      ReadGeneratorArtefact(CheckpointDir("curator") + "/curator.ckpt").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), AllOf(HasSubstr("private"), HasSubstr(path)));
}

TEST_F(DistributedTest, StatusCommandAndMetricsEndpointReportTheRun) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::strict);
  privacy.set_epsilon(8.0);
  absl::StatusOr<v1::StatusResponse> status = absl::UnknownError("not fetched");
  absl::StatusOr<v1::StatusResponse> foreign = absl::UnknownError("not fetched");
  absl::StatusOr<v1::StatusResponse> outsider = absl::UnknownError("not fetched");
  absl::StatusOr<v1::StatusResponse> as_party = absl::UnknownError("not fetched");
  std::string metrics;
  int metrics_code = 0;
  auto outcome = RunAll(
      StartCurator(300, privacy, "127.0.0.1:0"),
      [&](const std::string& name, int port) { return PartyConfigFor(name, port, privacy); },
      [&](CuratorServer& curator) {
        const std::string address = absl::StrCat("127.0.0.1:", curator.port());
        status = FetchCuratorStatus(address, Tls("certs", "operator"), false, absl::Seconds(10));
        foreign =
            FetchCuratorStatus(address, Tls("other-ca", "hospital"), false, absl::Seconds(10));
        // Signed by the run's CA, but neither the operator nor a party of the roster.
        outsider = FetchCuratorStatus(address, Tls("certs", "mallory"), false, absl::Seconds(10));
        as_party = FetchCuratorStatus(address, Tls("certs", "bank"), false, absl::Seconds(10));
        ASSERT_GT(curator.metrics_port(), 0);
        httplib::Client client("127.0.0.1", curator.metrics_port());
        const auto response = client.Get("/metrics");
        ASSERT_TRUE(response);
        metrics_code = response->status;
        metrics = response->body;
      });
  ASSERT_TRUE(outcome.curator.ok()) << outcome.curator;
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(foreign.ok()) << "a certificate from another CA got the status";
  EXPECT_EQ(outsider.status().code(), absl::StatusCode::kPermissionDenied) << outsider.status();
  EXPECT_THAT(outsider.status().message(), HasSubstr("spiffe://vfsynth/operator"));
  ASSERT_TRUE(as_party.ok()) << as_party.status();
  // The parties' network addresses are not the status readers' business.
  const absl::StatusOr<std::string> json = ToJson(*status);
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, AllOf(Not(HasSubstr("127.0.0.1")), Not(HasSubstr("ipv4:"))));
  EXPECT_EQ(status->state(), v1::finished);
  EXPECT_EQ(status->round(), Training().rounds());
  EXPECT_NEAR(status->epsilon_spent(), 8.0, 1e-3);
  ASSERT_EQ(status->parties_size(), static_cast<int>(kParties.size()));
  for (int k = 0; k < status->parties_size(); ++k) {
    const v1::PartyStatus& party = status->parties(k);
    EXPECT_EQ(party.name(), kParties[k]);
    EXPECT_TRUE(party.registered() && party.aligned());
    // A party's own releases are a strict part of the joint ones.
    EXPECT_GT(party.epsilon_spent(), 0);
    EXPECT_LT(party.epsilon_spent(), status->epsilon_spent());
    EXPECT_GE(party.seconds_since_last_message(), 0);
    EXPECT_GT(party.bytes_sent(), 0);
    EXPECT_GT(party.bytes_received(), 0);
  }
  const std::string report = FormatStatusReport(*status);
  EXPECT_THAT(report, HasSubstr("run it-run: finished, round 3/3"));
  EXPECT_THAT(report, HasSubstr("against published: epsilon 8 spent of 8 at delta 1e-05"));
  EXPECT_THAT(report, HasSubstr("against other_party: epsilon "));
  // Every observer's view: amplified against the curator, not against the other parties.
  ASSERT_EQ(status->guarantees_size(), 4);
  EXPECT_EQ(status->plan_digest().size(), 64u);
  EXPECT_NEAR(status->guarantees(1).epsilon_spent(), 8.0, 1e-3);  // curator
  EXPECT_GT(status->guarantees(2).epsilon_spent(), 8.0);          // other_party
  EXPECT_THAT(metrics, HasSubstr("vfsynth_epsilon_spent{observer=\"published\"} 7.99"));
  EXPECT_THAT(metrics, HasSubstr("vfsynth_differentially_private{observer=\"other_party\"} 1\n"));
  EXPECT_THAT(report, HasSubstr("insurer"));

  // strict: D_s sees released features only, so its loss may be shown.
  EXPECT_TRUE(status->has_critic_loss());
  EXPECT_THAT(metrics, HasSubstr("\nvfsynth_critic_loss "));
  ASSERT_TRUE(status->has_generator_loss());
  EXPECT_NE(status->generator_loss(), 0.0);
  EXPECT_THAT(metrics, HasSubstr("\nvfsynth_generator_loss "));
  EXPECT_EQ(metrics_code, 200);
  EXPECT_THAT(metrics, HasSubstr("\nvfsynth_round 3\n"));
  EXPECT_THAT(metrics, HasSubstr("vfsynth_run_state{state=\"finished\"} 1\n"));
  // The endpoint reports the same traffic counters as GetStatus.
  EXPECT_THAT(metrics, HasSubstr(absl::StrCat("vfsynth_party_received_bytes_total{party=\"bank\"} ",
                                              status->parties(2).bytes_received(), "\n")));
}

// The bank refused the run for `reason`: the curator failed it naming the bank and the
// reason (told without the bank's local paths), and no party's session succeeded
// (`nothing_charged`: nor charged anything).
void ExpectBankRefusedTheRun(const RunOutcome& outcome, const std::string& reason,
                             bool nothing_charged) {
  ASSERT_FALSE(outcome.curator.ok());
  EXPECT_THAT(outcome.curator.message(), AllOf(HasSubstr("party 'bank' refuses the run"),
                                               HasSubstr(WithoutLocalPaths(reason))));
  EXPECT_EQ(outcome.status.state(), v1::failed);
  EXPECT_THAT(outcome.parties[2].message(), HasSubstr(reason));
  for (size_t k = 0; k < kParties.size(); ++k) {
    EXPECT_FALSE(outcome.parties[k].ok()) << kParties[k];
    if (nothing_charged) EXPECT_EQ(outcome.party_epsilon_spent[k], 0.0) << kParties[k];
  }
}

TEST_F(DistributedTest, PartyRefusesARunOverItsBudget) {
  v1::PrivacyConfig run_privacy;
  run_privacy.set_mode(v1::PrivacyConfig::dpsgd);
  run_privacy.set_noise_multiplier(0.3);  // far too little noise for the bank's budget
  auto outcome = RunAll(StartCurator(300, run_privacy), [&](const std::string& name, int port) {
    v1::PrivacyConfig privacy = run_privacy;
    if (name == "bank") privacy.set_epsilon(1.0);
    return PartyConfigFor(name, port, privacy);
  });
  // The bank tells the curator, which fails the run for everyone at once (not at the join timeout).
  ExpectBankRefusedTheRun(outcome, "privacy.epsilon 1", /*nothing_charged=*/true);
  EXPECT_EQ(outcome.parties[2].code(), absl::StatusCode::kFailedPrecondition);
}

// A ledger that cannot keep a charge (here /dev/full, which reads forever): the party
// refuses the run naming its ledger, the curator fails it at once naming the party, and
// nobody charged anything.
TEST_F(DistributedTest, APartyWhoseLedgerCannotKeepAChargeFailsTheRunAtOnce) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::strict);
  privacy.set_epsilon(8.0);
  const absl::Time start = absl::Now();
  auto outcome = RunAll(StartCurator(300, privacy), [&](const std::string& name, int port) {
    v1::PartyConfig config = PartyConfigFor(name, port, privacy);
    if (name == "bank") config.mutable_privacy()->set_ledger("/dev/full");
    return config;
  });
  // Alignment included, well before the curator's join timeout (300 s).
  EXPECT_LT(absl::Now() - start, absl::Seconds(200));
  ExpectBankRefusedTheRun(outcome, "privacy ledger /dev/full is not a regular file",
                          /*nothing_charged=*/true);
  EXPECT_EQ(outcome.parties[2].code(), absl::StatusCode::kFailedPrecondition);
}

// The party's own failure after the plans matched, before anything of it left (a ledger
// charge or record that cannot be written; here its kept labels, whose path is a
// directory): the party tells the curator, which fails the run at once instead of waiting
// for the party until the join timeout.
TEST_F(DistributedTest, APartysFailureBeforeItsFirstReleaseFailsTheRunAtOnce) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::strict);
  privacy.set_epsilon(8.0);
  auto curator = StartCurator(300, privacy, "", WithLabelPairs());
  const std::string labels = CheckpointDir("bank") + "/labels.release";
  std::filesystem::create_directories(labels);
  const absl::Time start = absl::Now();
  auto outcome = RunAll(std::move(curator), [&](const std::string& name, int port) {
    return PartyConfigFor(name, port, privacy);
  });
  // Alignment included, well before the curator's join timeout (300 s).
  EXPECT_LT(absl::Now() - start, absl::Seconds(200));
  ExpectBankRefusedTheRun(outcome, labels, /*nothing_charged=*/false);
}

// The joint epsilon assumes one set of settings: a party at another epsilon fails the
// whole run, named with the setting, before any party has released or charged anything.
TEST_F(DistributedTest, APartyAtAnotherEpsilonFailsTheRunBeforeAnyRelease) {
  v1::PrivacyConfig run_privacy;
  run_privacy.set_mode(v1::PrivacyConfig::strict);
  run_privacy.set_epsilon(8.0);
  v1::TrainingConfig training = Training();
  training.set_marginal_weight(
      1.0);  // a release right after alignment, were the plans not checked first
  auto outcome =
      RunAll(StartCurator(300, run_privacy, "", training), [&](const std::string& name, int port) {
        v1::PrivacyConfig privacy = run_privacy;
        if (name == "bank") privacy.set_epsilon(5.0);
        return PartyConfigFor(name, port, privacy);
      });
  ASSERT_FALSE(outcome.curator.ok());
  EXPECT_THAT(outcome.curator.message(),
              HasSubstr("party 'bank' plans privacy.epsilon = 5 but the curator plans 8"));
  EXPECT_EQ(outcome.status.state(), v1::failed);
  ASSERT_FALSE(outcome.parties[2].ok());
  EXPECT_THAT(outcome.parties[2].message(), HasSubstr("privacy.epsilon"));
  for (size_t k = 0; k < kParties.size(); ++k) {
    EXPECT_FALSE(outcome.parties[k].ok()) << kParties[k];
    EXPECT_TRUE(LedgerCharges(kParties[k]).empty()) << kParties[k];
  }
}

// A run of the parties `party_config` configures, but the bank holding the secrets file
// `secrets`.
RunOutcome RunWithBankSecrets(
    std::unique_ptr<CuratorServer> curator, const std::string& secrets,
    const std::function<v1::PartyConfig(const std::string&, int)>& party_config) {
  return RunAll(std::move(curator), [&](const std::string& name, int port) {
    v1::PartyConfig config = party_config(name, port);
    if (name == "bank") config.set_secrets(secrets);
    return config;
  });
}

// The run failed for every party because one refused it, saying `what` and naming the bank.
void ExpectRefusedNamingBank(const RunOutcome& outcome, const std::string& what) {
  ASSERT_FALSE(outcome.curator.ok());
  EXPECT_THAT(outcome.curator.message(), HasSubstr("refuses the run"));
  EXPECT_THAT(outcome.curator.message(), HasSubstr(what));
  EXPECT_THAT(outcome.curator.message(), HasSubstr("'bank'"));
  EXPECT_EQ(outcome.status.state(), v1::failed);
  for (size_t k = 0; k < kParties.size(); ++k) EXPECT_FALSE(outcome.parties[k].ok()) << kParties[k];
}

// The most likely mistake of parties set up by hand: one with another sampling_secret
// would order and sample the records its own way. The parties' signed statements carry
// check values of their secrets, so the run fails before any release, naming the party.
TEST_F(DistributedTest, APartyWithAnotherSamplingSecretFailsTheRunBeforeAnyRelease) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::strict);
  privacy.set_epsilon(8.0);
  v1::TrainingConfig training = Training();
  training.set_marginal_weight(1.0);  // a release right after the plans, were they not checked
  const std::string other = WriteSecrets("other-sampling-secret.txt",
                                         "another-sampling-secret-0123456789abcdef", kAlignmentKey);
  const RunOutcome outcome = RunWithBankSecrets(
      StartCurator(300, privacy, "", training), other,
      [&](const std::string& name, int port) { return PartyConfigFor(name, port, privacy); });
  ExpectRefusedNamingBank(outcome, "holds another sampling_secret than party");
  EXPECT_THAT(outcome.curator.message(), HasSubstr("give every party the same secrets file"));
  for (size_t k = 0; k < kParties.size(); ++k)
    EXPECT_TRUE(LedgerCharges(kParties[k]).empty()) << kParties[k];
}

// Another alignment_key fails alignment itself (the chain's MACs are under a key derived
// from it): the refusal names the party whose list did not verify and the secrets file.
TEST_F(DistributedTest, APartyWithAnotherAlignmentKeyFailsAlignmentNamingIt) {
  const std::string other = WriteSecrets("other-alignment-key.txt", kSamplingSecret,
                                         "another-alignment-key-0123456789abcdef");
  const RunOutcome outcome = RunWithBankSecrets(
      StartCurator(300), other,
      [&](const std::string& name, int port) { return PartyConfigFor(name, port); });
  ExpectRefusedNamingBank(outcome, "holds another alignment_key than this party");
  EXPECT_EQ(outcome.status.aligned_records(), 0);
}

// A budget against other parties cannot hold in dpsgd: the run is refused at planning.
TEST_F(DistributedTest, ABudgetAgainstPartiesIsRefusedWhereTheModeGivesNone) {
  v1::PrivacyConfig privacy;
  privacy.set_mode(v1::PrivacyConfig::dpsgd);
  privacy.set_epsilon(8.0);
  privacy.set_epsilon_budget_against_parties(100);
  auto outcome = RunAll(StartCurator(300, privacy), [&](const std::string& name, int port) {
    return PartyConfigFor(name, port, privacy);
  });
  ASSERT_FALSE(outcome.curator.ok());
  EXPECT_THAT(outcome.curator.message(), HasSubstr("gives no guarantee against other parties"));
  for (size_t k = 0; k < kParties.size(); ++k) {
    ASSERT_FALSE(outcome.parties[k].ok()) << kParties[k];
    EXPECT_THAT(outcome.parties[k].message(), HasSubstr("epsilon_budget_against_parties"))
        << kParties[k];
  }
}

TEST_F(DistributedTest, MismatchedPrivacyModeIsRefusedAtRegistration) {
  v1::PrivacyConfig strict;
  strict.set_mode(v1::PrivacyConfig::strict);
  strict.set_epsilon(5);
  auto curator = StartCurator(5, strict);
  auto stub = CuratorStub(curator->port(), Tls("certs", "hospital"));
  grpc::ClientContext context;
  v1::RegisterRequest request;
  request.set_party("hospital");
  request.set_protocol_version(kProtocolVersion);
  request.set_topology(v1::Topology::vertical);
  request.mutable_privacy()->set_mode(v1::PrivacyConfig::none);
  v1::RegisterResponse response;
  const grpc::Status status = stub->Register(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("privacy mode 'none'"));
}

// What a registration declares is bounded before the curator builds anything from it
// (a 100,000-category schema once took it to 7.45 GB): a schema over
// registration_limits is refused naming the limit, nothing of it is kept, and the same
// party's schema within the limits registers afterwards.
TEST_F(DistributedTest, OversizedSchemasAreRefusedAtRegistrationNamingTheLimit) {
  auto curator = StartCurator(30);
  auto stub = CuratorStub(curator->port(), Tls("certs", "hospital"));
  auto register_schema = [&](const v1::Schema& schema) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::RegisterRequest request;
    request.set_party("hospital");
    request.set_protocol_version(kProtocolVersion);
    request.set_topology(v1::Topology::vertical);
    request.mutable_privacy()->set_mode(v1::PrivacyConfig::none);
    request.set_rows(100);
    *request.mutable_schema() = schema;
    v1::RegisterResponse response;
    return stub->Register(&context, request, &response);
  };
  auto with_columns = [](int columns, int categories) {
    v1::Schema schema;
    for (int c = 0; c < columns; ++c) {
      v1::Column* column = schema.add_columns();
      column->set_name(absl::StrCat("c", c));
      column->set_type("categorical");
      for (int v = 0; v < categories; ++v) column->add_categories(absl::StrCat("v", v));
    }
    return schema;
  };
  const std::pair<v1::Schema, std::string> oversized[] = {
      {with_columns(1, 100'000),
       "declares 100000 categories, more than registration_limits.categories_per_column (1000)"},
      {with_columns(1001, 2), "1001 columns, more than registration_limits.columns (1000)"},
      {with_columns(5, 1000), "more than registration_limits.encoded_width (4096)"},
  };
  for (const auto& [schema, message] : oversized) {
    // Twice: a refused registration leaves nothing that changes the second answer.
    for (int attempt = 0; attempt < 2; ++attempt) {
      const grpc::Status status = register_schema(schema);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << message;
      EXPECT_THAT(status.error_message(), AllOf(HasSubstr("schema of 'hospital'"),
                                                HasSubstr(message)));
    }
  }
  EXPECT_FALSE(curator->core().Status().parties(0).registered());
  const grpc::Status genuine = register_schema(with_columns(3, 4));
  EXPECT_TRUE(genuine.ok()) << genuine.error_message();
  EXPECT_TRUE(curator->core().Status().parties(0).registered());
}

// A plaintext curator serves loopback only, whatever its config says: without TLS
// anyone on the path reads and forges every message.
TEST_F(DistributedTest, APlaintextCuratorRefusesToListenBeyondLoopback) {
  v1::CuratorConfig config = CuratorConfigFor(30);
  // As a caller might set them after the config was resolved (which refuses them).
  config.set_plaintext(true);
  config.set_listen("0.0.0.0:0");
  auto server = CuratorServer::BuildAndStart({config});
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("'0.0.0.0:0' is not a loopback address"));
}

// grpc.health.v1.Health/Check for service "" over `channel`, without the health proto:
// the request is the empty message, the answer's one field is its status (1 SERVING,
// 2 NOT_SERVING).
absl::StatusOr<int> HealthStatus(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Slice empty;
  grpc::ByteBuffer request(&empty, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                 &response, [&done](grpc::Status status) { done.set_value(status); });
  const grpc::Status status = done.get_future().get();
  if (!status.ok()) return absl::UnavailableError(status.error_message());
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return absl::InternalError("unreadable answer");
  std::string bytes;
  for (const grpc::Slice& slice : slices) bytes.append(slice.begin(), slice.end());
  if (bytes.size() != 2 || bytes[0] != 0x08) return absl::InternalError("not a status");
  return bytes[1];
}

// The plaintext health port a kubelet probes: SERVING while the run goes on and
// NOT_SERVING once it ended, as on the mTLS port, and no vfsynth call at all.
TEST_F(DistributedTest, TheHealthPortAnswersInPlaintextAndServesNothingElse) {
  v1::CuratorConfig config = CuratorConfigFor(/*join_timeout=*/1);
  config.set_health_listen("0.0.0.0:0");  // beyond loopback: the one plaintext exception
  ASSERT_TRUE(ResolveCuratorConfig("", &config).ok());
  std::filesystem::remove_all(std::filesystem::path(CheckpointDir("curator")).parent_path());
  auto curator = CuratorServer::BuildAndStart({config});
  ASSERT_TRUE(curator.ok()) << curator.status();
  ASSERT_GT((*curator)->health_port(), 0);
  ASSERT_NE((*curator)->health_port(), (*curator)->port());
  auto health = grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*curator)->health_port()),
                                    grpc::InsecureChannelCredentials());
  absl::StatusOr<int> serving = HealthStatus(health);
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_EQ(*serving, 1);

  v1::Curator::Stub on_health_port(health);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::StatusResponse run;
  EXPECT_EQ(on_health_port.GetStatus(&context, v1::StatusRequest(), &run).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(TryRegister(on_health_port, "hospital").error_code(), grpc::StatusCode::UNIMPLEMENTED);
  // The run's own port still takes mTLS only.
  EXPECT_FALSE(HealthStatus(grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*curator)->port()),
                                                grpc::InsecureChannelCredentials()))
                   .ok());

  EXPECT_FALSE((*curator)->Run().ok());  // no party joins within the second
  absl::StatusOr<int> ended = HealthStatus(health);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(*ended, 2);
}

// A running curator's /metrics answers a scraper within its timeout while many local
// connections sit idle on the endpoint.
TEST_F(DistributedTest, MetricsAreScrapedWhileManyConnectionsIdle) {
  auto curator = StartCurator(30, {}, "127.0.0.1:0");
  ASSERT_GT(curator->metrics_port(), 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(curator->metrics_port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    idle.push_back(fd);
  }
  httplib::Client client("127.0.0.1", curator->metrics_port());
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  const auto response = client.Get("/metrics");
  for (const int fd : idle) close(fd);
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->status, 200);
  EXPECT_THAT(response->body, HasSubstr("vfsynth_run_state{state=\"waiting\"} 1"));
}

// A certificate past its date fails every TLS handshake without a reason the other side
// could give: each daemon, and `vfsynth status`, refuses it at start naming file and date.
TEST_F(DistributedTest, ExpiredCertificatesAreRefusedAtStartNamingFileAndDate) {
  const std::string certs = *dir_ + "/certs";
  const std::string expired = certs + "/expired-hospital.crt";
  ASSERT_EQ(std::system(absl::StrCat("cd ", certs,
                                     " && openssl req -new -key hospital.key -subj /CN=hospital "
                                     "-out expired.csr 2>/dev/null && openssl x509 -req -in "
                                     "expired.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
                                     "-days -1 -out ",
                                     expired, " 2>/dev/null")
                            .c_str()),
            0);
  const auto expect_named = [&](const absl::Status& status) {
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(status.message(), AllOf(HasSubstr(absl::StrCat("tls.cert ", expired)),
                                        HasSubstr("expired on 20")));
  };
  v1::CuratorConfig curator = CuratorConfigFor(30);
  curator.mutable_tls()->set_cert(expired);
  auto server = CuratorServer::BuildAndStart({curator});
  ASSERT_FALSE(server.ok());
  expect_named(server.status());

  v1::PartyConfig party = PartyConfigFor("hospital", 1);
  party.mutable_tls()->set_cert(expired);
  auto daemon = PartyDaemon::BuildAndStart({party});
  ASSERT_FALSE(daemon.ok());
  expect_named(daemon.status());

  v1::TlsConfig status_tls = Tls("certs", "hospital");
  status_tls.set_cert(expired);
  expect_named(
      FetchCuratorStatus("127.0.0.1:1", status_tls, false, absl::Seconds(5)).status());
}

// An output directory that cannot take the table is found when the curator starts, not
// after training spent the budget; and a write that fails at the end points at the
// artefact from which `vfsynth synthesize` draws the table again.
TEST_F(DistributedTest, AnUnwritableOutputIsFoundAtStartAndAFailedWriteNamesTheArtefact) {
  v1::OutputConfig missing;
  missing.set_synthetic_csv(*dir_ + "/no-such-directory/synthetic.csv");
  auto refused = CuratorServer::BuildAndStart({CuratorConfigFor(30, {}, "", Training(), missing)});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              AllOf(HasSubstr("output.synthetic_csv"), HasSubstr("no-such-directory"),
                    HasSubstr("does not exist")));

  // The directory is there at start and gone when the table is written.
  const std::string vanishing = *dir_ + "/vanishing";
  std::filesystem::create_directories(vanishing);
  v1::OutputConfig output;
  output.set_synthetic_csv(vanishing + "/synthetic.csv");
  auto curator = StartCurator(300, {}, "", Training(), output);
  std::filesystem::remove_all(vanishing);
  const RunOutcome outcome = RunAll(std::move(curator), [&](const std::string& name, int port) {
    return PartyConfigFor(name, port);
  });
  ASSERT_FALSE(outcome.curator.ok());
  EXPECT_THAT(outcome.curator.message(),
              AllOf(HasSubstr("vfsynth synthesize --generator "),
                    HasSubstr(CheckpointDir("curator") + "/generator.vfsg")));
}

TEST_F(DistributedTest, MissingPartyFailsTheRunNamingIt) {
  auto curator = StartCurator(3);
  absl::Status run_status;
  std::thread run([&] { run_status = curator->Run(); });
  run.join();
  EXPECT_EQ(run_status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(run_status.message(), HasSubstr("hospital"));
  EXPECT_EQ(curator->core().Status().state(), v1::failed);
}

// A signal (PartySession::Cancel) ends every wait promptly: dialling a curator that is not
// there, and waiting in Align for parties that have not come.
TEST_F(DistributedTest, ACancelledPartyStopsWaitingWithinSeconds) {
  auto cancelled_after = [](const v1::PartyConfig& config, absl::Duration wait) {
    auto core = VerticalPartyCore::Create(config);
    EXPECT_TRUE(core.ok()) << core.status();
    PartySession session(config, core->get(), std::make_unique<GrpcCuratorLink>(config));
    absl::Status status;
    absl::Time returned;
    std::thread run([&] {
      status = session.Run();
      returned = absl::Now();
    });
    absl::SleepFor(wait);
    const absl::Time cancelled = absl::Now();
    session.Cancel();
    run.join();
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    return returned - cancelled;
  };
  // Nothing listens on port 1: the party would redial for connect_timeout_seconds (20).
  EXPECT_LT(cancelled_after(PartyConfigFor("hospital", 1), absl::Seconds(2)), absl::Seconds(5));
  // The curator holds Align until every party of its roster has registered.
  auto curator = StartCurator(60);
  std::thread run([&] { curator->Run().IgnoreError(); });
  EXPECT_LT(cancelled_after(PartyConfigFor("hospital", curator->port()), absl::Seconds(4)),
            absl::Seconds(5));
  curator->Shutdown(absl::Seconds(1));
  run.join();
}

}  // namespace
}  // namespace vfsynth
