// The horizontal topology over loopback mTLS: three parties holding rows of one schema, a
// run equal to the in-process reference of the same math, what crosses the wire, and the
// curator's refusals of bad input (another schema, a report outside the model).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/core/horizontal_party_core.h"
#include "client/core/party_session.h"
#include "client/grpc/grpc_curator_link.h"
#include "common/base/file_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/alignment.h"
#include "common/data/csv.h"
#include "common/data/party_data.h"
#include "common/federated/horizontal_party.h"
#include "common/federated/wae_table.h"
#include "common/net/tls.h"
#include "common/nn/wire_tensor.h"
#include "common/privacy/privacy_plan.h"
#include "common/protocol/protocol_version.h"
#include "server/core/horizontal_model.h"
#include "server/core/horizontal_rounds.h"
#include "server/grpc/curator_server.h"
#include "tests/integration/party_sessions.h"
#include "tests/unit/net/honest_attest_answer.h"
#include "vfsynth/v1/curator.grpc.pb.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kSource = VFSYNTH_SOURCE_DIR;
const std::vector<std::string> kParties = {"hospital", "insurer", "bank"};
// Parties of unequal sizes (150, 100 and 50 users): a round's 6 users split 3, 2 and 1.
const std::vector<int> kRowsOf = {300, 200, 100};
constexpr int kUsers = (300 + 200 + 100) / 2;
constexpr int kRounds = 5;
constexpr int64_t kStopRound = 3;  // where StopMidwayAndResume stops

// What a party has charged so far: users answered (signds) or rounds (dpfedavg).
int64_t Charged(const HorizontalPartyCore& core) {
  return core.ledger() != nullptr ? core.ledger()->users() : core.privacy_ledger()->charges();
}

// A run resumed by StopMidwayAndResume.
struct ResumedRun {
  std::unique_ptr<CuratorServer> curator;
  std::vector<std::unique_ptr<HorizontalPartyCore>> cores;  // hospital, insurer, bank
};

constexpr double kEpsilon = 8.0;

// A party's secret as a party draws it (64 hex digits), fixed for the reference.
std::string Secret(size_t party) {
  return Sha256Builder().Add(absl::StrCat("horizontal-test-secret-", party)).Hex();
}

class HorizontalTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/horizontal_test_", ::getpid()));
    std::filesystem::create_directories(*dir_ + "/parties");
    // Adult's first rows, cut by rows: every party the same columns, an id and a user
    // column (two rows a user, as in DP-FED-WAE's experiments).
    auto adult = ReadCsv(std::string(VFSYNTH_DATASETS_DIR) + "/adult.csv");
    ASSERT_TRUE(adult.ok()) << adult.status();
    auto schema = ReadFile(kSource + "/deploy/schemas/adult.schema.json");
    ASSERT_TRUE(schema.ok());
    std::string party_schema = *schema;
    party_schema.replace(party_schema.find('{'), 1,
                         "{\n  \"id_column\": \"id\",\n  \"user_column\": \"user\",");
    for (size_t k = 0; k < kParties.size(); ++k) {
      std::ofstream csv(*dir_ + "/parties/" + kParties[k] + ".csv");
      csv << "id,user," << absl::StrJoin(adult->header, ",") << "\n";
      const int first = std::accumulate(kRowsOf.begin(), kRowsOf.begin() + k, 0);
      for (int r = 0; r < kRowsOf[k]; ++r) {
        const int row = first + r;
        csv << kParties[k] << "-" << r << "," << kParties[k] << "-user-" << r / 2 << ","
            << absl::StrJoin(adult->rows[row], ",") << "\n";
      }
      ASSERT_TRUE(
          WriteFileAtomically(*dir_ + "/parties/" + kParties[k] + ".schema.json", party_schema)
              .ok());
    }
    const std::string certs = "bash " + kSource + "/deploy/gen-certs.sh ";
    ASSERT_EQ(std::system((certs + *dir_ + "/certs hospital insurer bank > /dev/null").c_str()), 0);
  }

  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete dir_;
    dir_ = nullptr;
  }

 protected:
  void SetUp() override { mode_ = v1::PrivacyConfig::signds; }

  static std::string TestDir() {
    return *dir_ + "/runs/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  static v1::TlsConfig Tls(const std::string& name) { return TestTls(*dir_ + "/certs", name); }

  static v1::HorizontalConfig Horizontal() {
    v1::HorizontalConfig h;
    h.set_users_per_round(6);
    h.set_local_epochs(2);
    h.set_hidden(16);
    h.set_latent(4);
    return h;
  }

  // A curator of the test's run on `port` (0: any); a fresh one clears the test's directory,
  // a resumed one continues from the checkpoint in it.
  static std::unique_ptr<CuratorServer> StartCurator(bool resume = false, int port = 0) {
    if (!resume) {
      std::filesystem::remove_all(TestDir());
      std::filesystem::create_directories(TestDir());
    }
    v1::CuratorConfig config;
    config.set_run_id("it-horizontal");
    config.set_topology(v1::Topology::horizontal);
    config.set_listen(absl::StrCat("127.0.0.1:", port));
    config.set_checkpoint_dir(TestDir() + "/curator");
    *config.mutable_tls() = Tls("curator");
    for (const auto& p : kParties) config.add_parties(p);
    config.mutable_privacy()->set_mode(mode_);
    config.mutable_privacy()->set_epsilon(kEpsilon);
    *config.mutable_horizontal() = Horizontal();
    config.mutable_training()->set_rounds(kRounds);
    config.mutable_training()->set_seed(11);
    config.mutable_training()->set_threads(1);
    config.mutable_training()->set_log_every(1);
    config.mutable_output()->set_synthetic_csv(
        TestDir() + "/synthetic.csv");  // rows unset: as many as the parties'
    config.set_join_timeout_seconds(120);
    config.set_round_timeout_seconds(60);
    const absl::Status resolved = ResolveCuratorConfig("", &config);
    EXPECT_TRUE(resolved.ok()) << resolved;
    auto server = CuratorServer::BuildAndStart({config, resume});
    EXPECT_TRUE(server.ok()) << server.status();
    return std::move(*server);
  }

  static v1::PartyConfig PartyConfigFor(const std::string& name, int port) {
    v1::PartyConfig config;
    config.set_name(name);
    config.set_topology(v1::Topology::horizontal);
    config.set_curator(absl::StrCat("127.0.0.1:", port));
    *config.mutable_tls() = Tls(name);
    config.set_data(*dir_ + "/parties/" + name + ".csv");
    config.set_schema(*dir_ + "/parties/" + name + ".schema.json");
    config.set_checkpoint_dir(TestDir() + "/" + name);
    config.mutable_privacy()->set_mode(mode_);
    config.mutable_privacy()->set_epsilon(kEpsilon);
    config.mutable_privacy()->set_ledger(TestDir() + "/" + name + ".ledger");
    config.set_connect_timeout_seconds(20);
    const absl::Status resolved = ResolvePartyConfig("", &config);
    EXPECT_TRUE(resolved.ok()) << resolved;
    return config;
  }

  static std::unique_ptr<HorizontalPartyCore> Party(size_t k, int port) {
    auto core = HorizontalPartyCore::Create(PartyConfigFor(kParties[k], port));
    EXPECT_TRUE(core.ok()) << core.status();
    if (!core.ok()) return nullptr;
    (*core)->set_party_secret(Secret(k));
    return std::move(*core);
  }

  // Registration, the join and the plan, answered to `core` as the run's curator would.
  static absl::Status AttestByHand(HorizontalPartyCore& core) {
    v1::RegisterResponse registered;
    registered.set_run_id("it-horizontal");
    registered.set_run_nonce(kTestRunNonce);
    registered.set_protocol_version(kProtocolVersion);
    registered.set_topology(v1::Topology::horizontal);
    *registered.mutable_horizontal() = Horizontal();
    registered.mutable_training()->set_rounds(kRounds);
    registered.mutable_training()->set_log_every(1);
    for (const auto& p : kParties) registered.add_parties(p);
    RETURN_IF_ERROR(core.AcceptRegistration(registered));
    v1::AlignResponse joined;
    joined.mutable_aligned()->set_records(kUsers);
    RETURN_IF_ERROR(core.AnswerAlign(joined).status());
    // The other parties state the same plan, each signed with its own certificate.
    ASSIGN_OR_RETURN(
        const v1::AttestPlanResponse plan,
        HonestAttestAnswer(core.MakeAttestPlanRequest(), kParties, std::nullopt,
                           [](const std::string& party) { return LoadListIdentity(Tls(party)); }));
    return core.AcceptCuratorPlan(plan);
  }

  // A model of the run's autoencoder, drawn from `seed`.
  static torch::Tensor ModelByHand(uint64_t seed) {
    auto data = LoadPartyData(*dir_ + "/parties/hospital.csv",
                              *dir_ + "/parties/hospital.schema.json", false, 0);
    EXPECT_TRUE(data.ok()) << data.status();
    torch::manual_seed(seed);
    return FlatParameters(*Wae(WaeOptions{data->encoder.width(), 16, 4}));
  }

  // Round `round`'s task for `users` users under `global`, as the run's curator sends it.
  static v1::CuratorMessage TaskByHand(int64_t round, int64_t users, const torch::Tensor& global) {
    v1::CuratorMessage message;
    message.set_run_id("it-horizontal");
    message.set_round(round);
    message.mutable_horizontal_task()->set_users(users);
    ToWire(global, message.mutable_horizontal_task()->mutable_model());
    return message;
  }

  // The run's model as the same math computes it in one process: each party's users and
  // secret, a fresh ledger of its own.
  static absl::StatusOr<torch::Tensor> Reference() {
    const std::string reference_dir = TestDir() + "/reference";
    std::filesystem::create_directories(reference_dir);
    HorizontalRoundOptions options;
    std::vector<std::unique_ptr<privacy::ParticipationLedger>> ledgers;
    std::vector<std::unique_ptr<HorizontalParty>> parties;
    for (size_t k = 0; k < kParties.size(); ++k) {
      ASSIGN_OR_RETURN(const PartyData data,
                       LoadPartyData(*dir_ + "/parties/" + kParties[k] + ".csv",
                                     *dir_ + "/parties/" + kParties[k] + ".schema.json", false, 0));
      const UserRows users =
          GroupByUser(WaeInputs(data.encoded, data.encoder.blocks()), data.users, data.ids);
      EXPECT_EQ(users.rows.size(), static_cast<size_t>(kRowsOf[k] / 2));
      std::vector<std::string> keys;
      for (const std::string& name : users.names) keys.push_back(AlignmentToken(Secret(k), name));
      ASSIGN_OR_RETURN(auto ledger, privacy::ParticipationLedger::Open(
                                        reference_dir + "/" + kParties[k] + ".ledger",
                                        {"it-horizontal", 1, kEpsilon}));
      ledgers.push_back(std::move(ledger));
      parties.push_back(
          std::make_unique<HorizontalParty>(users.rows, keys, ledgers.back().get(), Secret(k)));
      options.architecture = WaeOptions{data.encoder.width(), 16, 4};
    }
    // The mode's settings as every daemon resolves them.
    v1::HorizontalConfig horizontal = Horizontal();
    RETURN_IF_ERROR(ResolveHorizontalConfig(&horizontal, mode_));
    options.local = LocalUpdateOf(horizontal, mode_);
    options.top_k_ratio = 0.05;
    options.epsilon_per_round = kEpsilon;
    if (mode_ == v1::PrivacyConfig::dpfedavg) {
      // The plan every daemon resolves: its sample rate and calibrated noise multiplier.
      v1::PrivacyConfig privacy;
      privacy.set_mode(mode_);
      privacy.set_epsilon(kEpsilon);
      RETURN_IF_ERROR(ResolveHorizontalPrivacy(&privacy));
      v1::TrainingConfig training;
      training.set_rounds(kRounds);
      ASSIGN_OR_RETURN(const v1::PrivacyPlan plan,
                       ResolveHorizontalPlan(privacy, horizontal, training,
                                             static_cast<int>(kParties.size()), kUsers));
      options.dp_fedavg = DpFedAvgOptions{DpFedAvgMechanism(plan).sample_rate, privacy.clip_norm(),
                                          plan.noise_multiplier()};
    }
    return TrainHorizontalReference(options, kRounds, 6, horizontal.gamma(), 11,
                                    {parties[0].get(), parties[1].get(), parties[2].get()});
  }

  // The curator's model is Reference()'s, bit for bit.
  static void ExpectTheReferenceModel(CuratorServer& curator) {
    auto reference = Reference();
    ASSERT_TRUE(reference.ok()) << reference.status();
    const HorizontalModel* model =
        static_cast<HorizontalRounds&>(curator.core().protocol()).model_for_testing();
    ASSERT_NE(model, nullptr);
    EXPECT_TRUE(torch::equal(model->flat(), *reference))
        << (model->flat() - *reference).abs().max().item<double>();
  }

  // Registers, joins and attests `core` through `stub` by hand, as a PartySession would.
  static void JoinByHand(HorizontalPartyCore& core, v1::Curator::Stub& stub) {
    auto call = [&](auto method, const auto& request, auto* response) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      const grpc::Status status = (stub.*method)(&context, request, response);
      EXPECT_TRUE(status.ok()) << status.error_message();
    };
    v1::RegisterResponse registered;
    call(&v1::Curator::Stub::Register, core.MakeRegisterRequest(), &registered);
    ASSERT_TRUE(core.AcceptRegistration(registered).ok());
    v1::AlignResponse joined;
    call(&v1::Curator::Stub::Align, *core.MakeAlignRequest(), &joined);
    ASSERT_TRUE(core.AnswerAlign(joined).ok());
    v1::AttestPlanResponse plan;
    call(&v1::Curator::Stub::AttestPlan, core.MakeAttestPlanRequest(), &plan);
    ASSERT_TRUE(core.AcceptCuratorPlan(plan).ok());
  }

  // A party that speaks the protocol by hand: its messages from its core, on its own Train stream.
  struct PartyByHand {
    std::unique_ptr<HorizontalPartyCore> core;
    std::unique_ptr<v1::Curator::Stub> stub;
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderWriter<v1::PartyMessage, v1::CuratorMessage>> stream;
  };

  // Party k joined by hand, its Train stream open and its Hello sent.
  static void OpenByHand(size_t k, int port, PartyByHand& party) {
    party.core = Party(k, port);
    party.stub = CuratorStub(port, Tls(kParties[k]));
    ASSERT_NE(party.stub, nullptr);
    JoinByHand(*party.core, *party.stub);
    ASSERT_FALSE(HasFatalFailure());
    party.stream = party.stub->Train(&party.context);
    ASSERT_TRUE(party.stream->Write(party.core->MakeHello()));
  }

  // Answers every task on `party`'s stream from its core until the run ends; round 1's
  // answer first goes out as `forge` changes it, and the curator's refusal of it must name
  // `refusal`. Counts the forged answers in `forged`.
  static void AnswerForgingRoundOne(PartyByHand& party,
                                    const std::function<void(v1::PartyMessage*)>& forge,
                                    const std::string& refusal, int* forged) {
    v1::CuratorMessage message;
    while (party.stream->Read(&message)) {
      ASSERT_FALSE(message.has_chunk()) << "a task this small comes whole";
      auto replies = party.core->Handle(message);
      ASSERT_TRUE(replies.ok()) << replies.status();
      if (party.core->finished()) break;
      ASSERT_EQ(replies->size(), 1u);
      if (message.round() == 1 && *forged == 0) {
        v1::PartyMessage bad = (*replies)[0];
        forge(&bad);
        ASSERT_TRUE(party.stream->Write(bad));
        ++*forged;
        // The refusal comes before the next task: answer this round properly once it did.
        ASSERT_TRUE(party.stream->Read(&message));
        ASSERT_TRUE(message.has_error());
        EXPECT_THAT(message.error().message(), HasSubstr(refusal));
      }
      ASSERT_TRUE(party.stream->Write((*replies)[0]));
    }
    party.stream->WritesDone();
  }

  // A run stopped midway and resumed: the hospital and the insurer keep one session each
  // throughout (they redial the curator once it is back and answer the round it asks
  // again); the bank answers the first kStopRound rounds by hand, stops at round
  // kStopRound's task, unanswered, and the curator stops with it; both restart, the curator
  // from its checkpoint on the same address, the bank with --resume (its secret and ledger
  // read back from its checkpoint_dir), and the run finishes at the reference's model.
  void StopMidwayAndResume(ResumedRun* out);
  // A run in which the hospital and the insurer answer through their sessions and the bank
  // by hand, its round 1 answer first forged by `forge` (AnswerForgingRoundOne); the run
  // must finish at the reference's model.
  void RunWithTheBankForgingRoundOne(CuratorServer& curator,
                                     const std::function<void(v1::PartyMessage*)>& forge,
                                     const std::string& refusal);
  // The three parties' run over mTLS to its end (the curator started, not yet run); its
  // model must be the reference's. *cores: hospital, insurer, bank.
  void RunEveryParty(CuratorServer& curator,
                     std::vector<std::unique_ptr<HorizontalPartyCore>>* cores);

  static std::string* dir_;
  static v1::PrivacyConfig::Mode mode_;  // the run's privacy mode: signds unless a test sets it
};

std::string* HorizontalTest::dir_ = nullptr;
v1::PrivacyConfig::Mode HorizontalTest::mode_ = v1::PrivacyConfig::signds;

void HorizontalTest::RunEveryParty(CuratorServer& curator,
                                   std::vector<std::unique_ptr<HorizontalPartyCore>>* cores) {
  const int port = curator.port();
  absl::Status run_status;
  std::thread run([&] { run_status = curator.Run(); });
  for (size_t k = 0; k < kParties.size(); ++k) cores->push_back(Party(k, port));
  const std::vector<absl::Status> results =
      RunPartySessions(*cores, [&](size_t k) { return PartyConfigFor(kParties[k], port); });
  run.join();
  ASSERT_TRUE(run_status.ok()) << run_status;
  for (size_t k = 0; k < kParties.size(); ++k)
    EXPECT_TRUE(results[k].ok()) << kParties[k] << ": " << results[k];
  ExpectTheReferenceModel(curator);
}

TEST_F(HorizontalTest, MtlsRunEqualsTheInProcessReference) {
  auto curator = StartCurator();
  InboundRecorder recorder(curator->core().hub());
  std::vector<std::unique_ptr<HorizontalPartyCore>> cores;
  auto log = std::make_shared<std::ostringstream>();
  spdlog::default_logger()->sinks().push_back(
      std::make_shared<spdlog::sinks::ostream_sink_mt>(*log));
  RunEveryParty(*curator, &cores);
  spdlog::default_logger()->sinks().pop_back();
  ASSERT_FALSE(HasFatalFailure());
  // 5 rounds of 6 reports are far too few for the label: the curator warns, and runs on.
  const std::string logged = log->str();
  const size_t feasibility = logged.find("feasibility (signds): per-coordinate signal-to-noise");
  ASSERT_NE(feasibility, std::string::npos) << logged;
  const size_t line_start = logged.rfind('\n', feasibility) + 1;
  EXPECT_THAT(logged.substr(line_start, logged.find('\n', feasibility) - line_start),
              AllOf(HasSubstr("warning"), HasSubstr("at 300 users"),
                    HasSubstr("expect the label lost")));

  // Only SignDS reports crossed the wire, at most the users asked; every report charged.
  int64_t reports = 0;
  for (const v1::PartyMessage& m : recorder.messages()) {
    if (m.has_hello()) continue;
    ASSERT_TRUE(m.has_sign_ds_reports()) << m.payload_case();
    reports += m.sign_ds_reports().indices_size();
  }
  EXPECT_EQ(reports, kRounds * 6);
  // Each party answered its share, in proportion to its users.
  int64_t charged = 0;
  for (size_t k = 0; k < cores.size(); ++k) {
    EXPECT_EQ(cores[k]->ledger()->users(), kRounds * (3 - static_cast<int64_t>(k))) << kParties[k];
    charged += cores[k]->ledger()->users();
    EXPECT_DOUBLE_EQ(cores[k]->ledger()->max_epsilon_spent(), kEpsilon);
  }
  EXPECT_EQ(charged, reports);

  const v1::StatusResponse status = curator->core().Status();
  EXPECT_EQ(status.state(), v1::finished);
  EXPECT_EQ(status.round(), kRounds);
  EXPECT_DOUBLE_EQ(status.epsilon_spent(), kEpsilon);
  EXPECT_EQ(status.aligned_records(), kUsers);
  auto published = ReadCsv(TestDir() + "/synthetic.csv");
  ASSERT_TRUE(published.ok()) << published.status();
  EXPECT_EQ(published->rows.size(),
            static_cast<size_t>(std::accumulate(kRowsOf.begin(), kRowsOf.end(), 0)));
  EXPECT_EQ(published->header.front(), "age");
  EXPECT_TRUE(std::filesystem::exists(TestDir() + "/synthetic.privacy.json"));
}

TEST_F(HorizontalTest, ReportsOutsideTheModelAreRefusedAndTheRunGoesOn) {
  auto curator = StartCurator();
  RunWithTheBankForgingRoundOne(
      *curator,
      [](v1::PartyMessage* bad) {
        bad->mutable_sign_ds_reports()->clear_indices();
        bad->mutable_sign_ds_reports()->clear_positive();
        bad->mutable_sign_ds_reports()->add_indices(1 << 30);
        bad->mutable_sign_ds_reports()->add_positive(true);
      },
      "names coordinate 1073741824");
}

TEST_F(HorizontalTest, ADpFedAvgRunOverMtlsEqualsTheInProcessReferenceChargingEachRoundOnce) {
  mode_ = v1::PrivacyConfig::dpfedavg;
  auto curator = StartCurator();
  std::vector<std::unique_ptr<HorizontalPartyCore>> cores;
  RunEveryParty(*curator, &cores);
  ASSERT_FALSE(HasFatalFailure());
  // Each party's privacy ledger holds every round once, at the plan's epsilon (within the budget).
  const double planned = curator->core().Status().epsilon_planned();
  EXPECT_GT(planned, 0);
  EXPECT_LE(planned, kEpsilon);
  for (const auto& core : cores) {
    EXPECT_EQ(core->ledger(), nullptr);
    ASSERT_NE(core->privacy_ledger(), nullptr);
    EXPECT_EQ(core->privacy_ledger()->charges(), kRounds);
    EXPECT_NEAR(core->privacy_ledger()->Spent().epsilon, planned, 1e-9);
  }
  EXPECT_TRUE(std::filesystem::exists(TestDir() + "/synthetic.csv"));
}

TEST_F(HorizontalTest, ADpFedAvgSumOfAnotherSizeIsRefusedAndTheRunGoesOn) {
  mode_ = v1::PrivacyConfig::dpfedavg;
  auto curator = StartCurator();
  // Round 1's sum first with one value too many.
  RunWithTheBankForgingRoundOne(
      *curator,
      [](v1::PartyMessage* bad) {
        v1::Tensor* sum = bad->mutable_update_sum()->mutable_sum();
        sum->set_shape(0, sum->shape(0) + 1);
        sum->mutable_data()->append(sizeof(float), '\0');
      },
      "update_sum.sum");
}

void HorizontalTest::RunWithTheBankForgingRoundOne(
    CuratorServer& curator, const std::function<void(v1::PartyMessage*)>& forge,
    const std::string& refusal) {
  const int port = curator.port();
  absl::Status run_status;
  std::thread run([&] { run_status = curator.Run(); });
  std::vector<std::unique_ptr<HorizontalPartyCore>> cores;
  for (size_t k = 0; k < 2; ++k) cores.push_back(Party(k, port));
  std::vector<absl::Status> results;
  std::thread others([&] {
    results = RunPartySessions(cores, [&](size_t k) { return PartyConfigFor(kParties[k], port); });
  });
  PartyByHand bank;
  OpenByHand(2, port, bank);
  ASSERT_FALSE(HasFatalFailure());
  int forged = 0;
  AnswerForgingRoundOne(bank, forge, refusal, &forged);
  others.join();
  run.join();
  EXPECT_EQ(forged, 1);
  ASSERT_TRUE(run_status.ok()) << run_status;
  for (size_t k = 0; k < results.size(); ++k)
    EXPECT_TRUE(results[k].ok()) << kParties[k] << ": " << results[k];
  EXPECT_TRUE(bank.core->finished() && bank.core->finish_succeeded());
  // The refused answer moved nothing: the model is the reference's.
  ExpectTheReferenceModel(curator);
}

void HorizontalTest::StopMidwayAndResume(ResumedRun* out) {
  auto curator = StartCurator();
  const int port = curator->port();
  absl::Status first_status;
  std::thread first_run([&] { first_status = curator->Run(); });
  std::vector<std::unique_ptr<HorizontalPartyCore>>& cores = out->cores;
  for (size_t k = 0; k < 2; ++k) cores.push_back(Party(k, port));
  std::vector<absl::Status> results(cores.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < cores.size(); ++k) {
    threads.emplace_back([&, k] {
      const v1::PartyConfig config = PartyConfigFor(kParties[k], port);
      PartySession session(config, cores[k].get(), std::make_unique<GrpcCuratorLink>(config));
      results[k] = session.Run();
    });
  }
  {
    PartyByHand by_hand;
    OpenByHand(2, port, by_hand);
    ASSERT_FALSE(HasFatalFailure());
    HorizontalPartyCore* bank = by_hand.core.get();
    auto& stream = by_hand.stream;
    v1::CuratorMessage message;
    while (stream->Read(&message) && message.round() < kStopRound) {
      auto replies = bank->Handle(message);
      ASSERT_TRUE(replies.ok()) << replies.status();
      ASSERT_EQ(replies->size(), 1u);
      ASSERT_TRUE(stream->Write((*replies)[0]));
    }
    ASSERT_EQ(message.round(), kStopRound);
    // signds: its share is 1 user a round; dpfedavg: one charge a round.
    ASSERT_EQ(Charged(*bank), kStopRound);
    curator->core().Cancel(absl::UnavailableError("the curator stopped"));
    first_run.join();
    by_hand.context.TryCancel();
  }
  EXPECT_FALSE(first_status.ok());
  curator.reset();

  curator = StartCurator(/*resume=*/true, port);
  ASSERT_NE(curator, nullptr);
  absl::Status resumed_status;
  std::thread resumed_run([&] { resumed_status = curator->Run(); });
  const v1::PartyConfig bank_config = PartyConfigFor("bank", port);
  auto bank = HorizontalPartyCore::Create(bank_config, /*resume=*/true);
  ASSERT_TRUE(bank.ok()) << bank.status();
  const absl::Status bank_result =
      PartySession(bank_config, bank->get(), std::make_unique<GrpcCuratorLink>(bank_config)).Run();
  EXPECT_TRUE(bank_result.ok()) << bank_result;
  if (!bank_result.ok()) curator->core().Cancel(absl::AbortedError("the bank failed"));
  for (auto& t : threads) t.join();
  resumed_run.join();
  ASSERT_TRUE(resumed_status.ok()) << resumed_status;
  for (size_t k = 0; k < cores.size(); ++k)
    EXPECT_TRUE(results[k].ok()) << kParties[k] << ": " << results[k];
  cores.push_back(*std::move(bank));
  out->curator = std::move(curator);
  ExpectTheReferenceModel(*out->curator);
  EXPECT_EQ(out->curator->core().Status().round(), kRounds);
}

TEST_F(HorizontalTest, ARunStoppedMidwayResumesToTheSameModelChargingNoUserTwice) {
  ResumedRun run;
  StopMidwayAndResume(&run);
  ASSERT_FALSE(HasFatalFailure());
  // Every user asked was charged once, at the cap: the round asked again charged no one twice.
  int64_t charged = 0;
  for (const auto& core : run.cores) {
    charged += core->ledger()->users();
    EXPECT_DOUBLE_EQ(core->ledger()->max_epsilon_spent(), kEpsilon);
  }
  EXPECT_EQ(charged, kRounds * 6);
}

TEST_F(HorizontalTest, ADpFedAvgRunStoppedMidwayResumesToTheSameModelChargingEachRoundOnce) {
  mode_ = v1::PrivacyConfig::dpfedavg;
  ResumedRun run;
  StopMidwayAndResume(&run);
  ASSERT_FALSE(HasFatalFailure());
  // The round asked again was answered with the sum its charge records, and charged once.
  const double planned = run.curator->core().Status().epsilon_planned();
  for (const auto& core : run.cores) {
    EXPECT_EQ(core->privacy_ledger()->charges(), kRounds);
    EXPECT_NEAR(core->privacy_ledger()->Spent().epsilon, planned, 1e-9);
  }
}

TEST_F(HorizontalTest, AFreshPartyRefusesALedgerThatHoldsAnswers) {
  std::filesystem::remove_all(TestDir());
  std::filesystem::create_directories(TestDir());
  const v1::PartyConfig config = PartyConfigFor("hospital", 1);
  // An earlier start of the run charged one user, then lost its checkpoint directory.
  {
    auto ledger = privacy::ParticipationLedger::Open(config.privacy().ledger(),
                                                     {"it-horizontal", 1, kEpsilon});
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    ASSERT_TRUE((*ledger)->Take(0, "someone").ok());
  }
  auto core = HorizontalPartyCore::Create(config);
  ASSERT_TRUE(core.ok()) << core.status();
  const absl::Status refused = AttestByHand(**core);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("answers of 1 users"));
  EXPECT_FALSE(std::filesystem::exists(TestDir() + "/hospital/party.secret"));
}

TEST_F(HorizontalTest, ASignDsRoundAskedAgainUnderAnotherModelIsRefusedAcrossARestart) {
  std::filesystem::remove_all(TestDir());
  std::filesystem::create_directories(TestDir());
  const v1::PartyConfig config = PartyConfigFor("hospital", 1);
  const torch::Tensor global = ModelByHand(0);
  const torch::Tensor chosen = ModelByHand(1);
  v1::PartyMessage first;
  {
    auto core = HorizontalPartyCore::Create(config);
    ASSERT_TRUE(core.ok()) << core.status();
    ASSERT_TRUE(AttestByHand(**core).ok());
    auto replies = (*core)->Handle(TaskByHand(0, 3, global));
    ASSERT_TRUE(replies.ok()) << replies.status();
    first = replies->front();
    const auto refused = (*core)->Handle(TaskByHand(0, 3, chosen));
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
    EXPECT_THAT(refused.status().message(), HasSubstr("round 0 was answered to another question"));
  }
  // Restarted (as after a crash once the ledger held the round, before or after the
  // reports left): the other model is still refused, the same one answered byte for byte.
  auto core = HorizontalPartyCore::Create(config, /*resume=*/true);
  ASSERT_TRUE(core.ok()) << core.status();
  ASSERT_TRUE(AttestByHand(**core).ok());
  EXPECT_EQ((*core)->Handle(TaskByHand(0, 3, chosen)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto again = (*core)->Handle(TaskByHand(0, 3, global));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->front().SerializeAsString(), first.SerializeAsString());
  EXPECT_EQ((*core)->ledger()->users(), 3);
}

// The ledgers know users by digests keyed with party.secret: resumed without the run's
// ledger, on an older copy of it, or under another secret, users would be back under
// their caps (or look new and answer past them).
TEST_F(HorizontalTest, AResumedPartyRefusesAMissingOrOlderLedgerOrAnotherSecretInEitherMode) {
  for (const auto mode : {v1::PrivacyConfig::signds, v1::PrivacyConfig::dpfedavg}) {
    SCOPED_TRACE(v1::PrivacyConfig::Mode_Name(mode));
    mode_ = mode;
    std::filesystem::remove_all(TestDir());
    std::filesystem::create_directories(TestDir());
    const v1::PartyConfig config = PartyConfigFor("hospital", 1);
    const std::string ledger = config.privacy().ledger();
    const std::string older = ledger + ".older";
    {
      auto core = HorizontalPartyCore::Create(config);
      ASSERT_TRUE(core.ok()) << core.status();
      ASSERT_TRUE(AttestByHand(**core).ok());
      std::filesystem::copy_file(ledger, older);
      auto replies = (*core)->Handle(TaskByHand(0, 3, ModelByHand(0)));
      ASSERT_TRUE(replies.ok()) << replies.status();
    }
    auto resumed_refusal = [&config]() {
      auto core = HorizontalPartyCore::Create(config, /*resume=*/true);
      EXPECT_TRUE(core.ok()) << core.status();
      const absl::Status refused = core.ok() ? AttestByHand(**core) : core.status();
      EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
      return std::string(refused.message());
    };
    // Another party.secret.
    const std::string secret_path = TestDir() + "/hospital/party.secret";
    const absl::StatusOr<std::string> secret = ReadFile(secret_path);
    ASSERT_TRUE(secret.ok()) << secret.status();
    ASSERT_TRUE(WritePrivateFile(secret_path, std::string(64, 'e')).ok());
    EXPECT_THAT(resumed_refusal(), AllOf(HasSubstr("another party.secret"),
                                         HasSubstr("past their cap")));
    ASSERT_TRUE(WritePrivateFile(secret_path, *secret).ok());
    // An older copy of the ledger, without round 0's records.
    std::filesystem::copy_file(older, ledger, std::filesystem::copy_options::overwrite_existing);
    EXPECT_THAT(resumed_refusal(), HasSubstr("older copy"));
    // No ledger at all: refused, and none created.
    std::filesystem::remove(ledger);
    EXPECT_THAT(resumed_refusal(), HasSubstr("--resume"));
    EXPECT_FALSE(std::filesystem::exists(ledger));
  }
}

// Stopped before its plan matched, a party kept no secret and answered nothing: --resume
// says so and what to do, rather than that a secret it never wrote is missing.
TEST_F(HorizontalTest, AResumeOfAPartyThatNeverAnsweredSaysToStartItAgain) {
  std::filesystem::remove_all(TestDir());
  std::filesystem::create_directories(TestDir());
  auto core = HorizontalPartyCore::Create(PartyConfigFor("hospital", 1), /*resume=*/true);
  ASSERT_TRUE(core.ok()) << core.status();
  const absl::Status refused = AttestByHand(**core);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_THAT(refused.message(), AllOf(HasSubstr("nothing to resume"),
                                       HasSubstr("start it without --resume")));
}

TEST_F(HorizontalTest, APartyWithAnotherSchemaIsRefusedNamingTheColumn) {
  auto curator = StartCurator();
  const int port = curator->port();
  absl::Status run_status;
  std::thread run([&] { run_status = curator->Run(); });
  auto hospital_stub = CuratorStub(port, Tls("hospital"));
  ASSERT_NE(hospital_stub, nullptr);
  std::unique_ptr<HorizontalPartyCore> hospital = Party(0, port);
  v1::RegisterResponse response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(hospital_stub->Register(&context, hospital->MakeRegisterRequest(), &response).ok());
  }
  // The insurer declares one column differently.
  std::unique_ptr<HorizontalPartyCore> insurer = Party(1, port);
  v1::RegisterRequest other = insurer->MakeRegisterRequest();
  other.mutable_schema()->mutable_columns(0)->set_max(95);
  auto insurer_stub = CuratorStub(port, Tls("insurer"));
  ASSERT_NE(insurer_stub, nullptr);
  auto register_as_insurer = [&](const v1::RegisterRequest& request) {
    grpc::ClientContext context;
    return insurer_stub->Register(&context, request, &response);
  };
  const grpc::Status refused = register_as_insurer(other);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("column 1 ('age'"));
  EXPECT_THAT(refused.error_message(), HasSubstr("same columns"));
  // A vertical party, and more users than rows, are refused too.
  v1::RegisterRequest vertical = insurer->MakeRegisterRequest();
  vertical.set_topology(v1::Topology::vertical);
  const grpc::Status wrong_topology = register_as_insurer(vertical);
  EXPECT_EQ(wrong_topology.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(wrong_topology.error_message(),
              HasSubstr("configured for topology 'vertical' but this run is"));
  v1::RegisterRequest crowded = insurer->MakeRegisterRequest();
  crowded.set_users(crowded.rows() + 1);
  EXPECT_EQ(register_as_insurer(crowded).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(register_as_insurer(insurer->MakeRegisterRequest()).ok());
  curator->core().Cancel(absl::CancelledError("test over"));
  run.join();
  EXPECT_FALSE(run_status.ok());
}

}  // namespace
}  // namespace vfsynth
