// CuratorCore without gRPC: registration and alignment checks, and the round
// orchestrator driven through its SessionHub by hand-made party messages.
#include "server/core/curator_core.h"
#include "server/core/vertical_rounds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/checkpoint/checkpoint_file.h"
#include "common/config/config.h"
#include "common/data/psi.h"
#include "common/protocol/protocol_version.h"
#include "common/protocol/tensor_codec.h"
#include "server/core/curator_checkpoint.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A core running the vertical protocol, as the curator server builds it for that topology.
class VerticalCore : public CuratorCore {
 public:
  explicit VerticalCore(const v1::CuratorConfig& config)
      : CuratorCore(config, std::make_unique<VerticalRounds>(config), std::string(64, 'a')) {}
  VerticalRounds& rounds() { return static_cast<VerticalRounds&>(protocol()); }
};

constexpr char kRunId[] = "unit-run";
const std::string kNonce(64, 'b');
constexpr int kBatch = 4;
constexpr int kFeatureDim = 3;
constexpr int kAlphaWidth = 3;  // a: 2 categories, b: continuous
constexpr int kBetaWidth = 4;   // c: 3 categories, d: integer

v1::Schema AlphaSchema() {
  v1::Schema schema;
  v1::Column* a = schema.add_columns();
  a->set_name("a");
  a->set_type("categorical");
  a->add_categories("x");
  a->add_categories("y");
  v1::Column* b = schema.add_columns();
  b->set_name("b");
  b->set_type("continuous");
  b->set_min(0);
  b->set_max(1);
  return schema;
}

v1::Schema BetaSchema() {
  v1::Schema schema;
  v1::Column* c = schema.add_columns();
  c->set_name("c");
  c->set_type("categorical");
  for (const char* value : {"p", "q", "r"}) c->add_categories(value);
  v1::Column* d = schema.add_columns();
  d->set_name("d");
  d->set_type("integer");
  d->set_min(0);
  d->set_max(10);
  return schema;
}

v1::CuratorConfig Config(double round_timeout, double join_timeout, int rounds, int n_critic,
                         double reconnect_timeout = 30) {
  v1::CuratorConfig config;
  config.set_run_id(kRunId);
  config.set_plaintext(true);
  config.add_parties("alpha");
  config.add_parties("beta");
  config.set_round_timeout_seconds(round_timeout);
  config.set_join_timeout_seconds(join_timeout);
  v1::ModelConfig* model = config.mutable_model();
  model->set_z_dim(4);
  model->add_generator_hidden(8);
  model->add_feature_hidden(8);
  model->set_feature_dim(kFeatureDim);
  model->add_shared_hidden(8);
  v1::TrainingConfig* training = config.mutable_training();
  training->set_batch_size(kBatch);
  training->set_rounds(rounds);
  training->set_n_critic(n_critic);
  training->set_seed(5);
  training->set_threads(1);
  training->set_log_every(1);
  config.mutable_privacy()->set_mode(
      v1::PrivacyConfig::none);  // these tests exercise the protocol, not DP
  config.set_checkpoint_dir(
      absl::StrCat(::testing::TempDir(), "/curator_core_test/",
                   ::testing::UnitTest::GetInstance()->current_test_info()->name()));
  config.set_reconnect_timeout_seconds(reconnect_timeout);
  EXPECT_TRUE(ResolveCuratorConfig("", &config).ok());
  return config;
}

// Declares the run's privacy mode (RegisterRequest.privacy.mode must equal the curator's).
void DeclarePrivacyMode(v1::RegisterRequest* request) {
  request->mutable_privacy()->set_mode(Config(5, 5, 1, 1).privacy().mode());
}

// Records r<first> .. r<last>: a party's ids.
std::vector<std::string> Ids(int first, int last) {
  std::vector<std::string> ids;
  for (int i = first; i <= last; ++i) ids.push_back(absl::StrCat("r", i));
  return ids;
}

v1::RegisterRequest Registration(const std::string& party, const v1::Schema& schema,
                                 int64_t rows = 8) {
  v1::RegisterRequest request;
  request.set_party(party);
  request.set_protocol_version(kProtocolVersion);
  *request.mutable_schema() = schema;
  request.set_rows(rows);
  request.set_topology(v1::Topology::vertical);
  DeclarePrivacyMode(&request);
  return request;
}

// A party's side of alignment over ids r<first> .. r<last>, under its own secret.
struct TestParty {
  std::string name;
  PsiParty psi;
  std::vector<std::string> ids;
};

TestParty Party(const std::string& name, int first, int last, const std::string& secret = "") {
  absl::StatusOr<PsiParty> psi =
      PsiParty::Create(secret.empty() ? name + "-secret" : secret, Ids(first, last));
  EXPECT_TRUE(psi.ok()) << psi.status();
  return TestParty{name, std::move(*psi), Ids(first, last)};
}

v1::AlignRequest AlignRequest(const std::string& party, uint32_t hop,
                              const std::vector<std::string>& elements) {
  v1::AlignRequest request;
  request.set_run_id(kRunId);
  request.set_party(party);
  request.set_hop(hop);
  for (const std::string& element : elements) request.add_elements(element);
  return request;
}

std::vector<std::string> Elements(const v1::BlindingTask& task) {
  return {task.elements().begin(), task.elements().end()};
}

// Runs a party's side to the end: its own list, then every list handed out, blinded.
absl::StatusOr<v1::AlignResponse> AlignAs(CuratorCore& core, const TestParty& party) {
  v1::AlignRequest request = AlignRequest(party.name, 0, party.psi.own_list());
  while (true) {
    ASSIGN_OR_RETURN(v1::AlignResponse response, core.Align(party.name, request));
    if (!response.has_blind()) return response;
    ASSIGN_OR_RETURN(const std::vector<std::string> blinded,
                     party.psi.Blind(Elements(response.blind())));
    request = AlignRequest(party.name, response.blind().hop(), blinded);
  }
}

// Both parties align concurrently (each hop waits for every party).
std::pair<absl::StatusOr<v1::AlignResponse>, absl::StatusOr<v1::AlignResponse>> AlignBoth(
    CuratorCore& core, const TestParty& alpha, const TestParty& beta) {
  absl::StatusOr<v1::AlignResponse> beta_result;
  std::thread other([&] { beta_result = AlignAs(core, beta); });
  absl::StatusOr<v1::AlignResponse> alpha_result = AlignAs(core, alpha);
  other.join();
  return {std::move(alpha_result), std::move(beta_result)};
}

// The ids at the positions a party was given.
std::vector<std::string> AlignedIds(const TestParty& party, const v1::AlignResponse& response) {
  const absl::StatusOr<std::vector<int64_t>> rows = party.psi.Rows(std::vector<int64_t>(
      response.aligned().positions().begin(), response.aligned().positions().end()));
  EXPECT_TRUE(rows.ok()) << rows.status();
  std::vector<std::string> ids;
  for (const int64_t row : rows.value_or(std::vector<int64_t>()))
    ids.push_back(party.ids[static_cast<size_t>(row)]);
  std::sort(ids.begin(), ids.end());
  return ids;
}

void RegisterBoth(CuratorCore& core, int64_t alpha_rows = 8, int64_t beta_rows = 8) {
  ASSERT_TRUE(core.Register("alpha", Registration("alpha", AlphaSchema(), alpha_rows)).ok());
  ASSERT_TRUE(core.Register("beta", Registration("beta", BetaSchema(), beta_rows)).ok());
}

v1::Tensor Filled(std::vector<int64_t> shape, float value) {
  std::vector<float> values(static_cast<size_t>(ElementCount(shape)), value);
  v1::Tensor tensor;
  EncodeTensor(values.data(), shape, &tensor);
  return tensor;
}

v1::PartyMessage Envelope(int64_t round, int64_t step) {
  v1::PartyMessage message;
  message.set_run_id(kRunId);
  message.set_round(round);
  message.set_step(step);
  return message;
}

v1::PartyMessage Features(int64_t round, int64_t step,
                          std::vector<int64_t> real_shape = {kBatch, kFeatureDim},
                          std::vector<int64_t> fake_shape = {kBatch, kFeatureDim}) {
  v1::PartyMessage message = Envelope(round, step);
  *message.mutable_features()->mutable_h_real() = Filled(real_shape, 0.1f);
  *message.mutable_features()->mutable_h_fake() = Filled(fake_shape, -0.2f);
  return message;
}

// ---- registration and alignment ----

TEST(CuratorRegisterTest, UnknownPartyIsPermissionDenied) {
  VerticalCore core(Config(5, 5, 1, 1));
  auto response = core.Register("gamma", Registration("gamma", AlphaSchema()));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(response.status().message(), HasSubstr("'gamma'"));
}

TEST(CuratorRegisterTest, WrongProtocolVersionIsFailedPrecondition) {
  VerticalCore core(Config(5, 5, 1, 1));
  v1::RegisterRequest request = Registration("alpha", AlphaSchema());
  request.set_protocol_version(kProtocolVersion + 1);
  auto response = core.Register("alpha", request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(response.status().message(),
              HasSubstr(absl::StrCat("version ", kProtocolVersion + 1)));
}

TEST(CuratorRegisterTest, InvalidSchemaIsInvalidArgumentNamingTheParty) {
  VerticalCore core(Config(5, 5, 1, 1));
  v1::Schema schema = AlphaSchema();
  schema.mutable_columns(0)->clear_categories();
  auto response = core.Register("alpha", Registration("alpha", schema));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(),
              AllOf(HasSubstr("schema of 'alpha'"), HasSubstr("categories")));
  EXPECT_EQ(core.Register("alpha", Registration("alpha", v1::Schema())).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(core.Status().parties(0).registered());
}

TEST(CuratorRegisterTest, DpsgdPartyWithAnotherBudgetSplitIsFailedPrecondition) {
  v1::CuratorConfig config = Config(5, 5, 1, 1);
  config.mutable_privacy()->set_mode(v1::PrivacyConfig::dpsgd);
  config.mutable_privacy()->set_epsilon(10);
  ASSERT_TRUE(ResolveCuratorConfig("", &config).ok());
  VerticalCore core(config);
  v1::RegisterRequest request = Registration("alpha", AlphaSchema());
  request.mutable_privacy()->set_mode(v1::PrivacyConfig::dpsgd);
  request.mutable_privacy()->set_shared_critic_budget_share(0.5);
  auto response = core.Register("alpha", request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(response.status().message(),
              AllOf(HasSubstr("'alpha'"), HasSubstr("shared_critic_budget_share 0.5"),
                    HasSubstr(absl::StrCat("uses ", kDefaultSharedCriticBudgetShare))));
  EXPECT_FALSE(core.Status().parties(0).registered());
  request.mutable_privacy()->set_shared_critic_budget_share(kDefaultSharedCriticBudgetShare);
  EXPECT_TRUE(core.Register("alpha", request).ok());
}

TEST(CuratorRegisterTest, RegistrationIsIdempotentButTheSchemaIsFixed) {
  VerticalCore core(Config(5, 5, 1, 1));
  auto first = core.Register("alpha", Registration("alpha", AlphaSchema()));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->run_id(), kRunId);
  EXPECT_EQ(first->protocol_version(), kProtocolVersion);
  EXPECT_THAT(first->parties(), ElementsAre("alpha", "beta"));
  EXPECT_EQ(first->model().feature_dim(), kFeatureDim);
  EXPECT_EQ(first->training().batch_size(), kBatch);

  auto again = core.Register("alpha", Registration("alpha", AlphaSchema()));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->SerializeAsString(), first->SerializeAsString());

  auto changed = core.Register("alpha", Registration("alpha", BetaSchema()));
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(changed.status().message(), HasSubstr("different schema"));
  EXPECT_TRUE(core.Status().parties(0).registered());
  EXPECT_FALSE(core.Status().parties(1).registered());
}

TEST(CuratorAlignTest, MalformedListsAreInvalidArgument) {
  VerticalCore core(Config(5, 5, 1, 1));
  RegisterBoth(core, 9);
  const TestParty alpha = Party("alpha", 0, 7);
  for (const std::string& bad : {std::string(kPsiElementBytes, '\0'), std::string(31, 'a'),
                                 std::string(), alpha.psi.own_list()[3]}) {
    std::vector<std::string> list = alpha.psi.own_list();
    list.push_back(bad);
    const absl::Status status = core.Align("alpha", AlignRequest("alpha", 0, list)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("alignment element 8"));
  }
  EXPECT_EQ(core.Align("alpha", AlignRequest("alpha", 0, {})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      core.Align("alpha", AlignRequest("alpha", 2, alpha.psi.own_list())).status().message(),
      HasSubstr("has hops 0 to 1"));
  // A list of another length than the party's registered record count.
  const absl::Status short_list =
      core.Align("alpha", AlignRequest("alpha", 0, alpha.psi.own_list())).status();
  EXPECT_EQ(short_list.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_list.message(), HasSubstr("registered 9 records but its alignment list has 8"));
  EXPECT_FALSE(core.Status().parties(0).aligned());  // nothing was recorded
}

TEST(CuratorAlignTest, MustRegisterFirst) {
  VerticalCore core(Config(5, 5, 1, 1));
  const TestParty alpha = Party("alpha", 0, 7);
  auto response = core.Align("alpha", AlignRequest("alpha", 0, alpha.psi.own_list()));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(response.status().message(), HasSubstr("must Register before Align"));
  EXPECT_EQ(core.Align("gamma", AlignRequest("gamma", 0, alpha.psi.own_list())).status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(CuratorAlignTest, WrongRunIdIsFailedPrecondition) {
  VerticalCore core(Config(5, 5, 1, 1));
  RegisterBoth(core);
  v1::AlignRequest request = AlignRequest("alpha", 0, Party("alpha", 0, 7).psi.own_list());
  request.set_run_id("other-run");
  auto response = core.Align("alpha", request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(response.status().message(), HasSubstr("'other-run'"));
}

TEST(CuratorAlignTest, EveryPartyLearnsWhichOfItsOwnRecordsAreInTheIntersection) {
  VerticalCore core(Config(5, 10, 1, 1));
  RegisterBoth(core);
  EXPECT_EQ(core.Status().state(), v1::waiting);
  const TestParty alpha = Party("alpha", 0, 7);
  const TestParty beta = Party("beta", 2, 9);
  auto [alpha_result, beta_result] = AlignBoth(core, alpha, beta);
  ASSERT_TRUE(alpha_result.ok()) << alpha_result.status();
  ASSERT_TRUE(beta_result.ok()) << beta_result.status();
  ASSERT_TRUE(alpha_result->has_aligned());
  const std::vector<std::string> common = Ids(2, 7);
  EXPECT_EQ(AlignedIds(alpha, *alpha_result), common);
  EXPECT_EQ(AlignedIds(beta, *beta_result), common);
  EXPECT_EQ(alpha_result->aligned().records(), 6);
  EXPECT_EQ(beta_result->aligned().records(), 6);
  EXPECT_EQ(core.Status().aligned_records(), 6);
  EXPECT_EQ(core.Status().state(), v1::aligning);
  EXPECT_TRUE(core.Status().parties(0).aligned());
  EXPECT_TRUE(core.Status().parties(1).aligned());
}

TEST(CuratorAlignTest, IntersectionSmallerThanBatchFailsForEveryoneAndTheRun) {
  VerticalCore core(Config(5, 10, 1, 1));
  RegisterBoth(core, 6, 6);
  auto [alpha, beta] = AlignBoth(core, Party("alpha", 0, 5), Party("beta", 4, 9));
  for (const auto* result : {&alpha, &beta}) {
    EXPECT_EQ(result->status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(result->status().message(),
                AllOf(HasSubstr("only 2 records"), HasSubstr("batch_size 4")));
  }
  const absl::Status run = core.Run();
  EXPECT_EQ(run.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(core.Status().state(), v1::failed);
}

TEST(CuratorAlignTest, JoinTimeoutNamesTheMissingParty) {
  VerticalCore core(Config(5, 0.3, 1, 1));
  RegisterBoth(core);
  auto alone = core.Align("alpha", AlignRequest("alpha", 0, Party("alpha", 0, 7).psi.own_list()));
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(alone.status().message(), AllOf(HasSubstr("hop 0"), HasSubstr("beta")));
  const absl::Status run = core.Run();
  EXPECT_EQ(run.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(run.message(), AllOf(HasSubstr("beta"), ::testing::Not(HasSubstr("alpha"))));
}

TEST(CuratorAlignTest, HopsOutOfTurnAreRefused) {
  VerticalCore core(Config(5, 0.3, 1, 1));
  RegisterBoth(core);
  const TestParty alpha = Party("alpha", 0, 7);
  const absl::Status early =
      core.Align("alpha", AlignRequest("alpha", 1, alpha.psi.own_list())).status();
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(early.message(), HasSubstr("sent alignment hop 1 before hop 0"));
  // Taken, then the wait for beta times out; hop 1 is not handed out yet.
  EXPECT_EQ(core.Align("alpha", AlignRequest("alpha", 0, alpha.psi.own_list())).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  const absl::Status unhanded =
      core.Align("alpha", AlignRequest("alpha", 1, alpha.psi.own_list())).status();
  EXPECT_EQ(unhanded.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(unhanded.message(), HasSubstr("before that hop's list was handed out"));
}

TEST(CuratorAlignTest, AReconnectingPartyGetsItsTaskAgainAndMustBlindAsBefore) {
  VerticalCore core(Config(5, 10, 1, 1));
  RegisterBoth(core);
  const TestParty alpha = Party("alpha", 0, 7);
  const TestParty beta = Party("beta", 2, 9);
  absl::StatusOr<v1::AlignResponse> beta_result;
  std::thread other([&] { beta_result = AlignAs(core, beta); });
  const v1::AlignRequest own = AlignRequest("alpha", 0, alpha.psi.own_list());
  const absl::StatusOr<v1::AlignResponse> task = core.Align("alpha", own);
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_TRUE(task->has_blind());
  EXPECT_EQ(task->blind().hop(), 1u);
  EXPECT_EQ(task->blind().elements_size(), 8);
  // The connection dropped: the same list again gets the same task.
  const absl::StatusOr<v1::AlignResponse> again = core.Align("alpha", own);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->SerializeAsString(), task->SerializeAsString());
  // Blinded lists must have the handed-out length.
  const std::vector<std::string> blinded = *alpha.psi.Blind(Elements(task->blind()));
  const std::vector<std::string> shorter(blinded.begin(), blinded.end() - 1);
  EXPECT_THAT(core.Align("alpha", AlignRequest("alpha", 1, shorter)).status().message(),
              HasSubstr("7 elements for the 8 handed out"));
  const absl::StatusOr<v1::AlignResponse> done =
      core.Align("alpha", AlignRequest("alpha", 1, blinded));
  other.join();
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(beta_result.ok()) << beta_result.status();
  EXPECT_EQ(AlignedIds(alpha, *done), Ids(2, 7));
  EXPECT_EQ(AlignedIds(beta, *beta_result), Ids(2, 7));
  // Another blinding of a hop already taken is refused.
  std::vector<std::string> other_blinding = blinded;
  std::swap(other_blinding[0], other_blinding[1]);
  EXPECT_THAT(core.Align("alpha", AlignRequest("alpha", 1, other_blinding)).status().message(),
              HasSubstr("blinded hop 1 differently than before"));
}

TEST(CuratorAlignTest, ARejoiningPartyGetsItsPositionsBackOnlyForTheSameList) {
  VerticalCore core(Config(5, 10, 1, 1));
  RegisterBoth(core);
  const TestParty alpha = Party("alpha", 0, 7);
  auto [first, beta] = AlignBoth(core, alpha, Party("beta", 2, 9));
  ASSERT_TRUE(first.ok() && beta.ok()) << first.status() << " " << beta.status();

  // Restarted with its party secret: the same list, the positions straight back
  // (beta takes no part).
  const absl::StatusOr<v1::AlignResponse> rejoined =
      core.Align("alpha", AlignRequest("alpha", 0, alpha.psi.own_list()));
  ASSERT_TRUE(rejoined.ok()) << rejoined.status();
  EXPECT_EQ(rejoined->SerializeAsString(), first->SerializeAsString());

  // Restarted with another secret: the same records, but another list.
  const TestParty renewed = Party("alpha", 0, 7, "another-secret");
  const absl::Status refused =
      core.Align("alpha", AlignRequest("alpha", 0, renewed.psi.own_list())).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(),
              AllOf(HasSubstr("'alpha' sent another list of its records than before"),
                    HasSubstr("checkpoint_dir")));
  EXPECT_EQ(core.Status().aligned_records(), 6);
}

TEST(CuratorCheckpointTest, StartupRequiresACheckpointToResumeAndRefusesToOverwriteOne) {
  v1::CuratorConfig config = Config(5, 5, 1, 1);
  std::filesystem::remove_all(config.checkpoint_dir());
  absl::Status status = CheckCuratorCheckpointOnStartup(config, /*resume=*/true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("--resume: there is no checkpoint at"));
  const absl::StatusOr<std::string> nonce = CheckCuratorCheckpointOnStartup(config, false);
  ASSERT_TRUE(nonce.ok()) << nonce.status();

  ASSERT_TRUE(WriteCheckpoint(CuratorCheckpointPath(config),
                              CuratorCheckpointHeader(config, *nonce, "data", 3), "state")
                  .ok());
  status = CheckCuratorCheckpointOnStartup(config, false).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("already exists"), HasSubstr("round 3"), HasSubstr("--resume")));
  const absl::StatusOr<std::string> resumed = CheckCuratorCheckpointOnStartup(config, true);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(*resumed, *nonce);

  v1::CuratorConfig other_run = config;
  other_run.set_run_id("another-run");
  EXPECT_THAT(CheckCuratorCheckpointOnStartup(other_run, true).status().message(),
              HasSubstr("belongs to run 'unit-run'"));
  // Settings that change the state's meaning change the header the checkpoint must carry.
  v1::CuratorConfig other_settings = config;
  other_settings.mutable_training()->set_gp_lambda(1);
  EXPECT_NE(CuratorCheckpointHeader(other_settings, kNonce, "data", 3).config_digest(),
            CuratorCheckpointHeader(config, kNonce, "data", 3).config_digest());
  v1::CuratorConfig only_logging = config;
  only_logging.mutable_training()->set_log_every(7);
  EXPECT_EQ(CuratorCheckpointHeader(only_logging, kNonce, "data", 3).config_digest(),
            CuratorCheckpointHeader(config, kNonce, "data", 3).config_digest());
}

TEST(CuratorCheckpointTest, EachFreshStartDrawsANonceThatAStartBeforeItsFirstCheckpointKeeps) {
  v1::CuratorConfig config = Config(5, 5, 1, 1);
  std::filesystem::remove_all(config.checkpoint_dir());
  const absl::StatusOr<std::string> first = CheckCuratorCheckpointOnStartup(config, false);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->size(), 64u);
  // Stopped before its first checkpoint: parties that joined it may hold state already.
  const absl::StatusOr<std::string> again = CheckCuratorCheckpointOnStartup(config, false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);
  // The same job started over in a clean directory is another start.
  std::filesystem::remove_all(config.checkpoint_dir());
  const absl::StatusOr<std::string> other = CheckCuratorCheckpointOnStartup(config, false);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(*other, *first);
}

TEST(CuratorCheckpointTest, ACheckpointCopiedFromAnotherStartOfTheRunIsRefused) {
  v1::CuratorConfig config = Config(5, 5, 1, 1);
  std::filesystem::remove_all(config.checkpoint_dir());
  const absl::StatusOr<std::string> nonce = CheckCuratorCheckpointOnStartup(config, false);
  ASSERT_TRUE(nonce.ok()) << nonce.status();
  // Another start's checkpoint (same run id and settings) lands in this directory.
  ASSERT_TRUE(WriteCheckpoint(CuratorCheckpointPath(config),
                              CuratorCheckpointHeader(config, kNonce, "data", 3), "state")
                  .ok());
  const absl::StatusOr<std::string> resumed = CheckCuratorCheckpointOnStartup(config, true);
  EXPECT_EQ(resumed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(resumed.status().message(), HasSubstr("belongs to another start of run 'unit-run'"));
  // Read back against this start's nonce, the header is refused too.
  const absl::Status refused = CheckCuratorCheckpointHeader(
      CuratorCheckpointHeader(config, kNonce, "data", 3), config, *nonce, "data", "ck");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("another start of the run"));
}

TEST(CuratorCheckpointTest, ACheckpointOfOtherSettingsOrOtherDataIsRefused) {
  v1::CuratorConfig config = Config(5, 5, 1, 1);
  config.mutable_training()->set_marginal_weight(1);
  config.mutable_training()->set_label_column("c");
  ASSERT_EQ(config.model().experimental().conditioned_column(), "");
  const v1::CheckpointHeader written = CuratorCheckpointHeader(config, kNonce, "data", 3);
  EXPECT_TRUE(CheckCuratorCheckpointHeader(written, config, kNonce, "data", "ck").ok());
  for (const auto& change : std::vector<std::function<void(v1::CuratorConfig*)>>{
           [](v1::CuratorConfig* c) {
             c->mutable_training()->set_gp_lambda(c->training().gp_lambda() + 1);
           },
           [](v1::CuratorConfig* c) {
             c->mutable_training()->mutable_experimental()->set_marginal_reverse_weight(0);
           },
           [](v1::CuratorConfig* c) {
             c->mutable_model()->mutable_experimental()->set_conditioned_column("c");
           }}) {
    v1::CuratorConfig other = config;
    change(&other);
    const absl::Status refused = CheckCuratorCheckpointHeader(written, other, kNonce, "data", "ck");
    EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(refused.message(), HasSubstr("belongs to another configuration"));
  }
  EXPECT_THAT(CheckCuratorCheckpointHeader(written, config, kNonce, "other data", "ck").message(),
              HasSubstr("set of aligned records"));
}

TEST(CuratorAlignTest, CancelWakesAWaitingAlign) {
  VerticalCore core(Config(5, 30, 1, 1));
  RegisterBoth(core);
  absl::StatusOr<v1::AlignResponse> result;
  const TestParty alpha = Party("alpha", 0, 7);
  std::thread waiter(
      [&] { result = core.Align("alpha", AlignRequest("alpha", 0, alpha.psi.own_list())); });
  core.Cancel(absl::CancelledError("shutdown"));
  waiter.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
}

// ---- the round orchestrator ----

class CuratorRoundTest : public ::testing::Test {
 protected:
  // Registers and aligns both parties, starts Run() and opens both streams.
  // `before_run` may queue inbound messages the run will find waiting.
  void Start(v1::CuratorConfig config, const std::function<void()>& before_run = {}) {
    core_ = std::make_unique<VerticalCore>(config);
    RegisterBoth(*core_);
    auto [alpha, beta] = AlignBoth(*core_, Party("alpha", 0, 7), Party("beta", 2, 9));
    ASSERT_TRUE(alpha.ok() && beta.ok()) << alpha.status() << " " << beta.status();
    ASSERT_TRUE(core_->hub().Connect(0).ok());
    ASSERT_TRUE(core_->hub().Connect(1).ok());
    if (before_run) before_run();
    run_ = std::thread([this] { run_status_ = core_->Run(); });
  }

  void TearDown() override {
    if (core_ != nullptr) core_->Cancel(absl::CancelledError("test over"));
    if (run_.joinable()) run_.join();
  }

  // The next message the curator queues for `party`; a watchdog cancels the run
  // instead of letting a missing message hang the test.
  v1::CuratorMessage Next(int party) {
    auto next =
        std::async(std::launch::async, [this, party] { return core_->hub().NextOutgoing(party); });
    if (next.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << "the curator sent nothing to party " << party;
      core_->Cancel(absl::CancelledError("test watchdog"));
    }
    std::optional<v1::CuratorMessage> message = next.get();
    if (!message.has_value()) {
      ADD_FAILURE() << "party " << party << "'s queue ended";
      return v1::CuratorMessage();
    }
    return *message;
  }

  absl::Status Finish() {
    run_.join();
    return run_status_;
  }

  void Deliver(int party, v1::PartyMessage message) {
    core_->hub().Deliver(party, std::move(message), 0);
  }

  // Delivers a bad message and checks the ProtocolError that answers it.
  void ExpectRejected(int party, v1::PartyMessage message, const std::vector<std::string>& mentions,
                      int64_t round = 0, int64_t step = 0) {
    Deliver(party, std::move(message));
    const v1::CuratorMessage reply = Next(party);
    ASSERT_TRUE(reply.has_error()) << reply.DebugString();
    EXPECT_EQ(reply.error().code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
    for (const std::string& mention : mentions)
      EXPECT_THAT(reply.error().message(), HasSubstr(mention));
    EXPECT_EQ(reply.run_id(), kRunId);
    EXPECT_EQ(reply.round(), round);  // the curator answers in the phase it waits in
    EXPECT_EQ(reply.step(), step);
  }

  // Both parties answer critic step `step` correctly; the curator must answer
  // each with its feature gradients (which shows it was still waiting).
  void CompleteCriticStep(int64_t round, int64_t step) {
    Deliver(0, Features(round, step));
    Deliver(1, Features(round, step));
    for (int k = 0; k < 2; ++k) {
      const v1::CuratorMessage reply = Next(k);
      ASSERT_TRUE(reply.has_feature_gradients()) << reply.DebugString();
      EXPECT_EQ(reply.step(), step);
      EXPECT_THAT(reply.feature_gradients().grad_real().shape(), ElementsAre(kBatch, kFeatureDim));
      EXPECT_THAT(reply.feature_gradients().grad_fake().shape(), ElementsAre(kBatch, kFeatureDim));
    }
  }

  void ExpectCriticTasks(int64_t round, int64_t step) {
    const int widths[] = {kAlphaWidth, kBetaWidth};
    for (int k = 0; k < 2; ++k) {
      const v1::CuratorMessage task = Next(k);
      ASSERT_TRUE(task.has_critic_task()) << task.DebugString();
      EXPECT_EQ(task.run_id(), kRunId);
      EXPECT_EQ(task.round(), round);
      EXPECT_EQ(task.step(), step);
      EXPECT_TRUE(
          ValidateTensor(task.critic_task().fake_slice(), {kBatch, widths[k]}, "slice", 1 << 20)
              .ok());
    }
  }

  std::unique_ptr<VerticalCore> core_;
  std::thread run_;
  absl::Status run_status_;
};

TEST_F(CuratorRoundTest, WronglyShapedFeaturesAreAnsweredAndTheRoundWaitsOn) {
  ASSERT_NO_FATAL_FAILURE(Start(Config(30, 30, 2, 2)));
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 0));
  ExpectRejected(0, Features(0, 0, {kBatch, 2}),
                 {"features.h_real", "expected shape [4, 3]", "got [4, 2]"});
  ExpectRejected(0, Features(0, 0, {kBatch, kFeatureDim}, {kBatch + 1, kFeatureDim}),
                 {"features.h_fake", "[5, 3]"});
  EXPECT_EQ(core_->Status().state(), v1::training);
  CompleteCriticStep(0, 0);
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 1));
  core_->Cancel(absl::CancelledError("done"));
  EXPECT_EQ(Finish().code(), absl::StatusCode::kCancelled);
}

TEST_F(CuratorRoundTest, NonFiniteFeaturesAreRejected) {
  ASSERT_NO_FATAL_FAILURE(Start(Config(30, 30, 2, 2)));
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 0));
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    v1::PartyMessage message = Features(0, 0);
    std::memcpy(
        message.mutable_features()->mutable_h_fake()->mutable_data()->data() + 5 * sizeof(float),
        &bad, sizeof(float));
    ExpectRejected(0, message, {"features.h_fake", "non-finite", "element 5"});
  }
  // The other party's NaN is answered too, once the curator gets to it.
  v1::PartyMessage nan = Features(0, 0);
  const float value = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(nan.mutable_features()->mutable_h_real()->mutable_data()->data(), &value,
              sizeof(float));
  Deliver(0, Features(0, 0));
  ExpectRejected(1, nan, {"features.h_real", "non-finite", "element 0"});
  Deliver(1, Features(0, 0));
  for (int k = 0; k < 2; ++k) EXPECT_TRUE(Next(k).has_feature_gradients());
}

TEST_F(CuratorRoundTest, MessagesForAnotherStepRoundRunOrPhaseAreRejected) {
  ASSERT_NO_FATAL_FAILURE(Start(Config(30, 30, 2, 2)));
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 0));
  ExpectRejected(0, Features(0, 1), {"unexpected message", "step 1", "for round 0, step 0"});
  ExpectRejected(0, Features(1, 0), {"unexpected message", "round 1"});
  v1::PartyMessage stale = Features(0, 0);
  stale.set_run_id("old-run");
  ExpectRejected(0, stale, {"'old-run'", "not this run"});
  v1::PartyMessage generator = Envelope(0, 0);
  *generator.mutable_generator_features()->mutable_h() = Filled({kBatch, kFeatureDim}, 0);
  ExpectRejected(0, generator, {"unexpected message"});
  v1::PartyMessage hello = Envelope(0, 0);
  hello.mutable_hello()->set_party("alpha");
  ExpectRejected(0, hello, {"unexpected message"});
  CompleteCriticStep(0, 0);
}

TEST_F(CuratorRoundTest, ProtocolErrorFromAPartyAbortsTheRunNamingIt) {
  ASSERT_NO_FATAL_FAILURE(Start(Config(30, 30, 2, 2)));
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 0));
  Deliver(0, Features(0, 0));
  v1::PartyMessage error = Envelope(0, 0);
  error.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
  error.mutable_error()->set_message("critic_task.fake_slice: bad");
  Deliver(1, error);
  const absl::Status status = Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("'beta'"), HasSubstr("critic_task.fake_slice: bad")));
  // Every party is told the run ended, and why.
  for (int k = 0; k < 2; ++k) {
    const v1::CuratorMessage finished = Next(k);
    ASSERT_TRUE(finished.has_finished()) << finished.DebugString();
    EXPECT_FALSE(finished.finished().succeeded());
    EXPECT_THAT(finished.finished().message(), HasSubstr("'beta'"));
    EXPECT_FALSE(core_->hub().NextOutgoing(k).has_value());
  }
  EXPECT_EQ(core_->Status().state(), v1::failed);
}

TEST_F(CuratorRoundTest, SilentPartyTimesOutNamingIt) {
  ASSERT_NO_FATAL_FAILURE(Start(Config(0.3, 30, 2, 2)));
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 0));
  Deliver(0, Features(0, 0));
  const absl::Status status = Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr("'beta'"));
}

TEST_F(CuratorRoundTest, BacklogOfBadMessagesDoesNotExtendTheRoundTimeout) {
  // Queued before the run starts, with a round timeout that has passed by the time
  // the first message is rejected: a party whose inbox never runs dry must still
  // time out, or a flood of bad messages could stall the run forever.
  constexpr int kBacklog = 10;
  ASSERT_NO_FATAL_FAILURE(Start(Config(/*round_timeout=*/1e-6, 30, 2, 2), [this] {
    Deliver(0, Features(0, 0));
    for (int i = 0; i < kBacklog; ++i) Deliver(1, Features(0, 7));
  }));
  const absl::Status status = Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr("'beta'"));
  int rejections = 0;
  while (std::optional<v1::CuratorMessage> message = core_->hub().NextOutgoing(1)) {
    if (message->has_error()) ++rejections;
  }
  EXPECT_EQ(rejections, 1) << "the curator kept reading past the round deadline";
}

TEST_F(CuratorRoundTest, PartyThatDoesNotComeBackEndsTheRunUnavailableNamingIt) {
  ASSERT_NO_FATAL_FAILURE(Start(Config(30, 30, 2, 2, /*reconnect_timeout=*/0.5)));
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 0));
  core_->hub().Disconnect(0);
  const absl::Status status = Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("'alpha'"), HasSubstr("did not come back")));
}

TEST_F(CuratorRoundTest, RejoiningPartyIsResentItsRoundAndRepeatedRepliesAreDropped) {
  ASSERT_NO_FATAL_FAILURE(Start(Config(30, 30, /*rounds=*/1, /*n_critic=*/2)));
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 0));
  CompleteCriticStep(0, 0);
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 1));
  // alpha's stream drops and a new one opens: alpha gets round 0 again from its start.
  core_->hub().Disconnect(0);
  ASSERT_TRUE(core_->hub().Connect(0).ok());
  const v1::CuratorMessage first = Next(0);
  ASSERT_TRUE(first.has_critic_task()) << first.DebugString();
  EXPECT_EQ(first.step(), 0);
  const v1::CuratorMessage gradients = Next(0);
  ASSERT_TRUE(gradients.has_feature_gradients()) << gradients.DebugString();
  EXPECT_EQ(gradients.step(), 0);
  const v1::CuratorMessage second = Next(0);
  ASSERT_TRUE(second.has_critic_task()) << second.DebugString();
  EXPECT_EQ(second.step(), 1);
  // Its journaled answer to step 0 arrives again: dropped silently, not rejected.
  Deliver(0, Features(0, 0));
  CompleteCriticStep(0, 1);
}

TEST_F(CuratorRoundTest, FullRunWithHandMadePartyMessages) {
  ASSERT_NO_FATAL_FAILURE(Start(Config(30, 30, /*rounds=*/1, /*n_critic=*/1)));
  ASSERT_NO_FATAL_FAILURE(ExpectCriticTasks(0, 0));
  CompleteCriticStep(0, 0);

  const int widths[] = {kAlphaWidth, kBetaWidth};
  for (int k = 0; k < 2; ++k) {
    const v1::CuratorMessage task = Next(k);
    ASSERT_TRUE(task.has_generator_task()) << task.DebugString();
    EXPECT_EQ(task.round(), 0);
    EXPECT_EQ(task.step(), -1);
    EXPECT_THAT(task.generator_task().fake_slice().shape(), ElementsAre(kBatch, widths[k]));
  }
  for (int k = 0; k < 2; ++k) {
    v1::PartyMessage features = Envelope(0, -1);
    *features.mutable_generator_features()->mutable_h() = Filled({kBatch, kFeatureDim}, 0.3f);
    Deliver(k, features);
  }
  for (int k = 0; k < 2; ++k) {
    const v1::CuratorMessage grad = Next(k);
    ASSERT_TRUE(grad.has_generator_feature_gradient()) << grad.DebugString();
    EXPECT_THAT(grad.generator_feature_gradient().grad().shape(), ElementsAre(kBatch, kFeatureDim));
  }
  // The slice gradient's width is the party's own encoded width.
  v1::PartyMessage wrong = Envelope(0, -1);
  *wrong.mutable_slice_gradient()->mutable_grad() = Filled({kBatch, kAlphaWidth}, 0.01f);
  for (int k = 0; k < 2; ++k) {
    v1::PartyMessage grad = Envelope(0, -1);
    *grad.mutable_slice_gradient()->mutable_grad() = Filled({kBatch, widths[k]}, 0.01f);
    if (k == 1) ExpectRejected(1, wrong, {"slice_gradient.grad", "[4, 4]", "got [4, 3]"}, 0, -1);
    Deliver(k, grad);
  }
  ASSERT_TRUE(Finish().ok()) << run_status_;
  for (int k = 0; k < 2; ++k) {
    const v1::CuratorMessage finished = Next(k);
    ASSERT_TRUE(finished.has_finished()) << finished.DebugString();
    EXPECT_TRUE(finished.finished().succeeded());
    EXPECT_FALSE(core_->hub().NextOutgoing(k).has_value());
  }
  EXPECT_EQ(core_->Status().state(), v1::finished);
  EXPECT_EQ(core_->Status().round(), 1);
  EXPECT_NE(core_->rounds().model_for_testing(), nullptr);
}

}  // namespace
}  // namespace vfsynth
