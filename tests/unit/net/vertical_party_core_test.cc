// VerticalPartyCore without gRPC: secrets, registration and alignment answers, and every
// curator round message checked before the party acts on it.
#include "client/core/vertical_party_core.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "client/core/alignment_chain.h"
#include "client/core/marginals_party_core.h"
#include "client/core/party_session.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/config/config.h"
#include "common/data/alignment.h"
#include "common/data/psi.h"
#include "common/gan/party_model.h"
#include "common/protocol/protocol_version.h"
#include "common/protocol/tensor_codec.h"
#include "tests/unit/net/honest_attest_answer.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

constexpr char kRunId[] = "unit-run";
constexpr char kAlignmentKey[] = "unit-alignment-key-0123456789abcdef";
constexpr int kBatch = 4;
constexpr int kNCritic = 2;
constexpr int kFeatureDim = 3;
constexpr int kWidth = 3;  // a: 2 categories, b: continuous
constexpr int64_t kLimit = 1 << 20;

std::string Dir() { return ::testing::TempDir() + "/party_core_test"; }

std::string Write(const std::string& name, const std::string& contents) {
  const std::string path = Dir() + "/" + name;
  EXPECT_TRUE(WriteFileAtomically(path, contents).ok()) << path;
  return path;
}

// A fresh checkpoint directory per core unless `checkpoint_dir` is given (a restart).
v1::PartyConfig Config(const std::string& secrets = "secrets.txt",
                       std::string checkpoint_dir = "") {
  static int cores = 0;
  if (checkpoint_dir.empty()) {
    checkpoint_dir =
        absl::StrCat(Dir(), "/ckpt-",
                     ::testing::UnitTest::GetInstance()->current_test_info()->name(), "-", cores++);
    std::filesystem::remove_all(checkpoint_dir);
  }
  v1::PartyConfig config;
  config.set_checkpoint_dir(checkpoint_dir);
  config.set_name("alpha");
  config.set_curator("127.0.0.1:1");
  config.set_plaintext(true);
  config.set_data(Dir() + "/alpha.csv");
  config.set_schema(Dir() + "/alpha.schema.json");
  config.set_secrets(Dir() + "/" + secrets);
  config.set_max_message_bytes(kLimit);
  config.mutable_privacy()->set_mode(
      v1::PrivacyConfig::none);  // these tests exercise the protocol, not DP
  EXPECT_TRUE(ResolvePartyConfig("", &config).ok());
  return config;
}

v1::RegisterResponse Registration() {
  v1::RegisterResponse response;
  response.set_run_id(kRunId);
  response.set_run_nonce(kTestRunNonce);
  response.set_protocol_version(kProtocolVersion);
  response.set_topology(v1::Topology::vertical);
  response.add_parties("alpha");
  response.add_parties("beta");
  v1::ModelConfig* model = response.mutable_model();
  model->set_z_dim(4);
  model->add_generator_hidden(8);
  model->add_feature_hidden(8);
  model->set_feature_dim(kFeatureDim);
  model->add_shared_hidden(8);
  v1::TrainingConfig* training = response.mutable_training();
  training->set_batch_size(kBatch);
  training->set_n_critic(kNCritic);
  training->set_rounds(3);
  training->set_seed(5);
  training->set_threads(1);
  return response;
}

// Beta's side of the alignment chain in the run of Registration(), or in `run_id`.
AlignmentChain BetaChain(const std::string& run_id = kRunId) {
  absl::StatusOr<AlignmentChain> chain =
      AlignmentChain::Create(kAlignmentKey, run_id, {"alpha", "beta"}, "beta");
  EXPECT_TRUE(chain.ok()) << chain.status();
  return *std::move(chain);
}

// The task of hop 1 for alpha: `elements` as beta's own list, MACed by `beta`.
v1::AlignResponse BlindingTaskOf(const std::vector<std::string>& elements,
                                 const AlignmentChain& beta = BetaChain()) {
  v1::AlignResponse task;
  task.mutable_blind()->set_hop(1);
  for (const std::string& element : elements) task.mutable_blind()->add_elements(element);
  absl::StatusOr<std::string> mac = beta.Mac(0, elements);
  EXPECT_TRUE(mac.ok()) << mac.status();
  task.mutable_blind()->set_chain_mac(mac.value_or(""));
  return task;
}

std::vector<std::string> Ids(int first, int last) {
  std::vector<std::string> ids;
  for (int i = first; i <= last; ++i) ids.push_back(absl::StrCat("r", i));
  return ids;
}

// The curator and beta, holding records r0..r9, through alpha's alignment up to the
// curator's last answer: the positions of alpha's list in the intersection, as if beta
// held records r<first>..r<last> only. Beta's list is the same on every call (alpha
// blinds one list per hop).
absl::StatusOr<v1::AlignedPositions> Positions(VerticalPartyCore& core, int first, int last) {
  const std::vector<std::string> ids = Ids(0, 9);
  ASSIGN_OR_RETURN(const PsiParty beta, PsiParty::Create("beta-secret", ids));
  ASSIGN_OR_RETURN(const v1::AlignRequest own, core.MakeAlignRequest());
  ASSIGN_OR_RETURN(const std::optional<v1::AlignRequest> blinded,
                   core.AnswerAlign(BlindingTaskOf(beta.own_list(), BetaChain(own.run_id()))));
  if (!blinded.has_value() || blinded->hop() != 1)
    return absl::InternalError("alpha did not blind hop 1");
  ASSIGN_OR_RETURN(
      const std::vector<std::string> alpha_list,
      beta.Blind(std::vector<std::string>(own.elements().begin(), own.elements().end())));
  // Beta's records at the positions of its list, and where each fully blinded element
  // sits in alpha's.
  std::vector<int64_t> all(ids.size());
  for (size_t p = 0; p < all.size(); ++p) all[p] = static_cast<int64_t>(p);
  ASSIGN_OR_RETURN(const std::vector<int64_t> beta_rows, beta.Rows(all));
  std::map<std::string, int64_t> in_alpha;
  for (size_t p = 0; p < alpha_list.size(); ++p) in_alpha[alpha_list[p]] = static_cast<int64_t>(p);
  std::vector<int64_t> positions;
  for (size_t p = 0; p < beta_rows.size(); ++p) {
    const int64_t row = beta_rows[p];
    const auto it = in_alpha.find(blinded->elements(static_cast<int>(p)));
    if (row >= first && row <= last && it != in_alpha.end()) positions.push_back(it->second);
  }
  std::sort(positions.begin(), positions.end());
  v1::AlignedPositions aligned;
  aligned.mutable_positions()->Add(positions.begin(), positions.end());
  aligned.set_records(static_cast<int64_t>(positions.size()));
  return aligned;
}

// Alpha aligned with a beta holding records r<first>..r<last>.
absl::Status AlignWith(VerticalPartyCore& core, int first, int last) {
  ASSIGN_OR_RETURN(const v1::AlignedPositions aligned, Positions(core, first, last));
  v1::AlignResponse response;
  *response.mutable_aligned() = aligned;
  ASSIGN_OR_RETURN(const std::optional<v1::AlignRequest> next, core.AnswerAlign(response));
  if (next.has_value()) return absl::InternalError("alpha asked for more after its positions");
  return absl::OkStatus();
}

// The curator's answer to AttestPlan when it planned as this party did, with beta's
// statement of that plan under `secrets_file` (unsigned: the tests' configs have no TLS files).
absl::StatusOr<v1::AttestPlanResponse> AnswerWithBetaHolding(VerticalPartyCore& core,
                                                             const std::string& secrets_file) {
  ASSIGN_OR_RETURN(const PartySecrets secrets, LoadPartySecrets(Dir() + "/" + secrets_file));
  return HonestAttestAnswer(
      core.MakeAttestPlanRequest(), {"alpha", "beta"},
      SharedSecrets{secrets.sampling_secret, secrets.alignment_key},
      [](const std::string&) -> absl::StatusOr<ListIdentity> { return ListIdentity(); });
}

absl::Status AttestOwnPlan(VerticalPartyCore& core) {
  ASSIGN_OR_RETURN(const v1::AttestPlanResponse response,
                   AnswerWithBetaHolding(core, "secrets.txt"));
  return core.AcceptCuratorPlan(response);
}

v1::Tensor Filled(std::vector<int64_t> shape, float value) {
  std::vector<float> values(static_cast<size_t>(ElementCount(shape)), value);
  v1::Tensor tensor;
  EncodeTensor(values.data(), shape, &tensor);
  return tensor;
}

v1::CuratorMessage Envelope(int64_t round, int64_t step) {
  v1::CuratorMessage message;
  message.set_run_id(kRunId);
  message.set_round(round);
  message.set_step(step);
  return message;
}

v1::CuratorMessage CriticTask(int64_t round, int64_t step,
                              std::vector<int64_t> shape = {kBatch, kWidth}) {
  v1::CuratorMessage message = Envelope(round, step);
  *message.mutable_critic_task()->mutable_fake_slice() = Filled(shape, 0.25f);
  return message;
}

v1::CuratorMessage FeatureGradients(int64_t round, int64_t step) {
  v1::CuratorMessage message = Envelope(round, step);
  *message.mutable_feature_gradients()->mutable_grad_real() = Filled({kBatch, kFeatureDim}, 0.01f);
  *message.mutable_feature_gradients()->mutable_grad_fake() = Filled({kBatch, kFeatureDim}, -0.01f);
  return message;
}

v1::CuratorMessage GeneratorTask(int64_t round) {
  v1::CuratorMessage message = Envelope(round, -1);
  *message.mutable_generator_task()->mutable_fake_slice() = Filled({kBatch, kWidth}, 0.5f);
  return message;
}

v1::CuratorMessage GeneratorFeatureGradient(int64_t round) {
  v1::CuratorMessage message = Envelope(round, -1);
  *message.mutable_generator_feature_gradient()->mutable_grad() =
      Filled({kBatch, kFeatureDim}, 0.02f);
  return message;
}

class VerticalPartyCoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(MakeDirectories(Dir()).ok());
    std::string csv = "id,a,b\n";
    for (int i = 0; i < 10; ++i)
      absl::StrAppend(&csv, "r", i, ",", i % 3 ? "x" : "y", ",", i / 10.0, "\n");
    Write("alpha.csv", csv);
    Write("alpha.schema.json", R"({"id_column":"id","columns":[
        {"name":"a","type":"categorical","categories":["x","y"]},
        {"name":"b","type":"continuous","min":0,"max":1,"encoding":"scalar"}]})");
    Write("secrets.txt",
          absl::StrCat(
              "# shared by the parties only\n  sampling_secret=unit-sampling-secret-0123456789abcdef  \n",
              "\nalignment_key=", kAlignmentKey, "\n"));
  }

  std::unique_ptr<VerticalPartyCore> Registered() {
    auto core = VerticalPartyCore::Create(Config());
    EXPECT_TRUE(core.ok()) << core.status();
    if (!core.ok()) return nullptr;
    EXPECT_TRUE((*core)->AcceptRegistration(Registration()).ok());
    return std::move(*core);
  }

  // Registered and aligned on records r2..r9 (8 >= batch size).
  std::unique_ptr<VerticalPartyCore> Aligned() {
    std::unique_ptr<VerticalPartyCore> core = Registered();
    if (core == nullptr) return nullptr;
    absl::Status status = AlignWith(*core, 2, 9);
    if (status.ok()) status = AttestOwnPlan(*core);
    EXPECT_TRUE(status.ok()) << status;
    return core;
  }
};

// ---- secrets ----

TEST_F(VerticalPartyCoreTest, LoadPartySecretsReadsBothKeysIgnoringComments) {
  auto secrets = LoadPartySecrets(Dir() + "/secrets.txt");
  ASSERT_TRUE(secrets.ok()) << secrets.status();
  EXPECT_EQ(secrets->sampling_secret, "unit-sampling-secret-0123456789abcdef");
  EXPECT_EQ(secrets->alignment_key, kAlignmentKey);
}

TEST_F(VerticalPartyCoreTest, LoadPartySecretsRejectsShortMissingOrUnknownKeys) {
  // 32 bytes as written is the least either key may have.
  const std::string bytes_31(31, 'k');
  for (const std::string& text :
       {absl::StrCat("sampling_secret=unit-sampling-secret-0123456789abcdef\nalignment_key=",
                     bytes_31, "\n"),
        absl::StrCat("sampling_secret=", bytes_31, "\nalignment_key=", kAlignmentKey, "\n")}) {
    auto secrets = LoadPartySecrets(Write("short.txt", text));
    EXPECT_EQ(secrets.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(secrets.status().message(),
                AllOf(HasSubstr("short.txt"), HasSubstr("at least 32 bytes")));
  }
  EXPECT_TRUE(LoadPartySecrets(Write("exact.txt", absl::StrCat("sampling_secret=", bytes_31,
                                                               "k\nalignment_key=", bytes_31,
                                                               "k\n")))
                  .ok());

  const std::string missing =
      Write("missing.txt", "sampling_secret=unit-sampling-secret-0123456789abcdef\n");
  EXPECT_EQ(LoadPartySecrets(missing).status().code(), absl::StatusCode::kInvalidArgument);

  const std::string unknown =
      Write("unknown.txt",
            "sampling_secret=unit-sampling-secret-0123456789abcdef\n"
            "alignment_key=unit-alignment-key-0123456789abcdef\nsalt=abcdefabcdefabcdef\n");
  auto secrets = LoadPartySecrets(unknown);
  EXPECT_EQ(secrets.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(secrets.status().message(), HasSubstr("unknown key 'salt'"));

  const std::string no_equals = Write("no_equals.txt",
                                      "sampling_secret unit-sampling-secret-0123456789abcdef\n"
                                      "alignment_key=unit-alignment-key-0123456789abcdef\n");
  EXPECT_FALSE(LoadPartySecrets(no_equals).ok());
  EXPECT_FALSE(LoadPartySecrets(Dir() + "/does-not-exist.txt").ok());
  // Create refuses to start without usable secrets.
  EXPECT_FALSE(VerticalPartyCore::Create(Config("short.txt")).ok());
}

// ---- registration and alignment ----

TEST_F(VerticalPartyCoreTest, RegisterRequestCarriesThePublicSchemaOnly) {
  auto core = VerticalPartyCore::Create(Config());
  ASSERT_TRUE(core.ok()) << core.status();
  const v1::RegisterRequest request = (*core)->MakeRegisterRequest();
  EXPECT_EQ(request.party(), "alpha");
  EXPECT_EQ(request.protocol_version(), kProtocolVersion);
  EXPECT_EQ(request.rows(), 10);
  EXPECT_EQ(request.schema().id_column(), "");  // the curator gets no id column
  EXPECT_THAT(request.schema().columns(), SizeIs(2));
}

TEST_F(VerticalPartyCoreTest, AcceptRegistrationChecksTheCuratorsAnswer) {
  auto core = VerticalPartyCore::Create(Config());
  ASSERT_TRUE(core.ok()) << core.status();
  v1::RegisterResponse response = Registration();
  response.set_protocol_version(kProtocolVersion + 1);
  EXPECT_EQ((*core)->AcceptRegistration(response).code(), absl::StatusCode::kFailedPrecondition);
  response = Registration();
  response.clear_run_id();
  EXPECT_EQ((*core)->AcceptRegistration(response).code(), absl::StatusCode::kInvalidArgument);
  response = Registration();
  response.set_topology(v1::Topology::horizontal);
  EXPECT_THAT(
      (*core)->AcceptRegistration(response).message(),
      HasSubstr(
          "the curator runs topology 'horizontal' but this party is configured for 'vertical'"));
  response = Registration();
  response.mutable_training()->set_batch_size(0);
  const absl::Status status = (*core)->AcceptRegistration(response);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("batch_size"));
  ASSERT_TRUE((*core)->AcceptRegistration(Registration()).ok());

  const absl::StatusOr<v1::AlignRequest> align = (*core)->MakeAlignRequest();
  ASSERT_TRUE(align.ok()) << align.status();
  EXPECT_EQ(align->run_id(), kRunId);
  EXPECT_EQ(align->party(), "alpha");
  EXPECT_EQ(align->hop(), 0u);
  ASSERT_THAT(align->elements(), SizeIs(10));
  const std::string token = absl::HexStringToBytes(AlignmentToken(kAlignmentKey, "r0"));
  for (const std::string& element : align->elements()) {
    EXPECT_THAT(element, SizeIs(kPsiElementBytes));
    EXPECT_NE(element, token);
  }
}

TEST_F(VerticalPartyCoreTest, TheAlignmentListDerivesFromThePartySecret) {
  // The same secret (a resumed party's) gives the same list; another secret another.
  auto list = [](const std::string& secret) -> std::string {
    auto core = VerticalPartyCore::Create(Config());
    EXPECT_TRUE(core.ok()) << core.status();
    EXPECT_TRUE((*core)->AcceptRegistration(Registration()).ok());
    (*core)->set_party_secret(secret);
    const absl::StatusOr<v1::AlignRequest> request = (*core)->MakeAlignRequest();
    EXPECT_TRUE(request.ok()) << request.status();
    return request.ok() ? request->SerializeAsString() : "";
  };
  EXPECT_EQ(list("secret-one"), list("secret-one"));
  EXPECT_NE(list("secret-one"), list("secret-two"));
}

TEST_F(VerticalPartyCoreTest, AnswerAlignBlindsOnlyAValidTask) {
  std::unique_ptr<VerticalPartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  const PsiParty beta = *PsiParty::Create("beta-secret", Ids(0, 3));
  const v1::AlignResponse valid = BlindingTaskOf(beta.own_list());
  EXPECT_EQ(core->AnswerAlign(valid).status().code(),
            absl::StatusCode::kFailedPrecondition);  // before its own list
  const absl::StatusOr<v1::AlignRequest> own = core->MakeAlignRequest();
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_THAT(own->chain_mac(), SizeIs(32));

  for (const uint32_t hop : {0u, 2u}) {
    v1::AlignResponse wrong_hop = valid;
    wrong_hop.mutable_blind()->set_hop(hop);
    EXPECT_THAT(core->AnswerAlign(wrong_hop).status().message(), HasSubstr("not one of 1 to 1"));
  }
  v1::AlignResponse short_element = valid;
  short_element.mutable_blind()->add_elements(std::string(5, 'a'));
  EXPECT_THAT(core->AnswerAlign(short_element).status().message(),
              HasSubstr("alignment element 4 has 5 bytes"));
  v1::AlignResponse empty = valid;
  empty.mutable_blind()->clear_elements();
  EXPECT_THAT(core->AnswerAlign(empty).status().message(), HasSubstr("empty list"));
  EXPECT_EQ(core->AnswerAlign(v1::AlignResponse()).status().code(),
            absl::StatusCode::kInvalidArgument);

  const absl::StatusOr<std::optional<v1::AlignRequest>> next = core->AnswerAlign(valid);
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((*next)->hop(), 1u);
  ASSERT_THAT((*next)->elements(), SizeIs(4));
  EXPECT_NE((*next)->elements(0), beta.own_list()[0]);  // blinded once more
  EXPECT_THAT((*next)->chain_mac(), SizeIs(32));
}

TEST_F(VerticalPartyCoreTest, AnswerAlignRefusesADictionaryPaddedTaskAndBlindsNothing) {
  std::unique_ptr<VerticalPartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  ASSERT_TRUE(core->MakeAlignRequest().ok());
  const PsiParty beta = *PsiParty::Create("beta-secret", Ids(0, 3));
  const v1::AlignResponse valid = BlindingTaskOf(beta.own_list());
  // The curator's guesses: H(id) of ids it wants to test, appended to beta's list (or
  // swapped in for its elements, keeping the length).
  const std::vector<std::string> guesses =
      PsiParty::Create("curator-secret", Ids(0, 49))->own_list();
  v1::AlignResponse padded = valid;
  for (const std::string& guess : guesses) padded.mutable_blind()->add_elements(guess);
  v1::AlignResponse swapped = valid;
  for (int i = 0; i < swapped.blind().elements_size(); ++i)
    swapped.mutable_blind()->set_elements(i, guesses[static_cast<size_t>(i)]);
  // Or its own list under a MAC it made up, or beta's MAC from another run.
  v1::AlignResponse forged = BlindingTaskOf(guesses);
  forged.mutable_blind()->set_chain_mac(std::string(32, '\x5a'));
  const v1::AlignResponse replayed = BlindingTaskOf(beta.own_list(), BetaChain("another-run"));
  for (const v1::AlignResponse& task : {padded, swapped, forged, replayed}) {
    const absl::Status status = core->AnswerAlign(task).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
    EXPECT_THAT(status.message(), HasSubstr("refusing to blind the curator's list"));
    for (const std::string& guess : guesses) {
      EXPECT_THAT(status.message(), Not(HasSubstr(guess)));
      EXPECT_THAT(status.message(), Not(HasSubstr(absl::BytesToHexString(guess))));
    }
  }
  // Nothing was blinded, so beta's genuine list is still this hop's first.
  const absl::StatusOr<std::optional<v1::AlignRequest>> next = core->AnswerAlign(valid);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_THAT((*next)->elements(), SizeIs(4));
}

// With two parties, alpha's own list handed back to it as beta's (under alpha's own MAC).
TEST_F(VerticalPartyCoreTest, AnswerAlignRefusesThePartysOwnListSentBack) {
  std::unique_ptr<VerticalPartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  const absl::StatusOr<v1::AlignRequest> own = core->MakeAlignRequest();
  ASSERT_TRUE(own.ok()) << own.status();
  v1::AlignResponse back;
  back.mutable_blind()->set_hop(1);
  *back.mutable_blind()->mutable_elements() = own->elements();
  back.mutable_blind()->set_chain_mac(own->chain_mac());
  const absl::Status status = core->AnswerAlign(back).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_THAT(status.message(), HasSubstr("refusing to blind the curator's list"));
}

// A roster naming alpha twice would make alpha's own hop-0 MAC the one it expects from
// its predecessor: alpha would blind its own list again.
TEST_F(VerticalPartyCoreTest, ARosterWithARepeatedOrEmptyNameIsRefused) {
  for (const std::vector<std::string>& roster :
       std::vector<std::vector<std::string>>{{"alpha", "alpha"}, {"alpha", ""}}) {
    auto core = VerticalPartyCore::Create(Config());
    ASSERT_TRUE(core.ok()) << core.status();
    v1::RegisterResponse registration = Registration();
    registration.clear_parties();
    for (const std::string& party : roster) registration.add_parties(party);
    const absl::Status status = (*core)->AcceptRegistration(registration);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr("the curator's roster"));
  }
}

TEST_F(VerticalPartyCoreTest, AcceptAlignmentRejectsUnorderedForeignMiscountedOrTooFewPositions) {
  std::unique_ptr<VerticalPartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  const absl::StatusOr<v1::AlignedPositions> aligned = Positions(*core, 2, 9);
  ASSERT_TRUE(aligned.ok()) << aligned.status();
  ASSERT_EQ(aligned->records(), 8);

  v1::AlignedPositions unordered = *aligned;
  std::swap(*unordered.mutable_positions()->Mutable(0), *unordered.mutable_positions()->Mutable(1));
  absl::Status status = core->AcceptAlignment(unordered);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("ascending"));

  v1::AlignedPositions duplicate = *aligned;
  duplicate.set_positions(1, duplicate.positions(0));
  EXPECT_EQ(core->AcceptAlignment(duplicate).code(), absl::StatusCode::kInvalidArgument);

  v1::AlignedPositions foreign = *aligned;
  foreign.set_positions(7, 10);  // beyond this party's 10 records
  EXPECT_THAT(core->AcceptAlignment(foreign).message(),
              HasSubstr("outside this party's 10 records"));

  v1::AlignedPositions miscounted = *aligned;
  miscounted.set_records(9);
  EXPECT_THAT(core->AcceptAlignment(miscounted).message(),
              HasSubstr("8 aligned positions for 9 records"));

  const absl::StatusOr<v1::AlignedPositions> few = Positions(*core, 0, 2);
  ASSERT_TRUE(few.ok()) << few.status();
  status = core->AcceptAlignment(*few);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("only 3"), HasSubstr("batch size 4")));
  EXPECT_EQ(core->model(), nullptr);  // nothing was built from a refused answer

  ASSERT_TRUE(core->AcceptAlignment(*aligned).ok());
  ASSERT_NE(core->model(), nullptr);
  EXPECT_EQ(core->model()->rows(), 8);
  EXPECT_EQ(core->model()->width(), kWidth);
}

TEST_F(VerticalPartyCoreTest, RealignmentAfterAReconnectMustNameTheSameRecords) {
  // Rows are reordered only once (the encoded buffer is gone): a second answer after a
  // reconnect (or the curator's restart, which reruns the intersection) is accepted
  // only if it names the same records, and never acted on.
  std::unique_ptr<VerticalPartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  PartyModel* model = core->model();
  EXPECT_TRUE(AlignWith(*core, 2, 9).ok());
  const absl::StatusOr<v1::AlignedPositions> other = Positions(*core, 1, 9);
  ASSERT_TRUE(other.ok()) << other.status();
  const absl::Status refused = core->AcceptAlignment(*other);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("different set of records"));
  EXPECT_EQ(core->model(), model);
}

TEST_F(VerticalPartyCoreTest, ReregistrationAfterAReconnectMustBeTheSameRun) {
  std::unique_ptr<VerticalPartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  EXPECT_TRUE(core->AcceptRegistration(Registration()).ok());
  v1::RegisterResponse other = Registration();
  other.set_run_id("other-run");
  EXPECT_THAT(core->AcceptRegistration(other).message(), HasSubstr("another run id"));
  other = Registration();
  other.mutable_training()->set_rounds(7);
  EXPECT_THAT(core->AcceptRegistration(other).message(), HasSubstr("other settings"));
}

// ---- round messages ----

// Nothing leaves before the curator's plan matched; a curator at other settings is
// refused naming the setting, and the party still answers nothing.
TEST_F(VerticalPartyCoreTest, NothingIsReleasedBeforeTheCuratorsPlanMatches) {
  std::unique_ptr<VerticalPartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  ASSERT_TRUE(AlignWith(*core, 2, 9).ok());
  EXPECT_THAT(core->Handle(CriticTask(0, 0)).status().message(),
              HasSubstr("before the privacy plans matched"));
  v1::AttestPlanResponse other;
  *other.mutable_plan() = core->privacy_plan();
  other.mutable_plan()->mutable_privacy()->set_clip_norm(3);
  const absl::Status refused = core->AcceptCuratorPlan(other);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("the curator plans privacy.clip_norm = 3"));
  EXPECT_FALSE(core->Handle(CriticTask(0, 0)).ok());
  ASSERT_TRUE(AttestOwnPlan(*core).ok());
  EXPECT_TRUE(core->Handle(CriticTask(0, 0)).ok());
}

// Beta set up with another sampling_secret would sample other batches: alpha refuses the
// plan before anything is released, naming beta, and answers no critic task.
TEST_F(VerticalPartyCoreTest, APeerWithAnotherSamplingSecretIsRefusedBeforeAnyRelease) {
  std::unique_ptr<VerticalPartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  ASSERT_TRUE(AlignWith(*core, 2, 9).ok());
  Write("beta-secrets.txt", absl::StrCat("sampling_secret=another-sampling-secret-0123456789ab\n",
                                         "alignment_key=", kAlignmentKey, "\n"));
  absl::StatusOr<v1::AttestPlanResponse> answer = AnswerWithBetaHolding(*core, "beta-secrets.txt");
  ASSERT_TRUE(answer.ok()) << answer.status();
  const absl::Status refused = core->AcceptCuratorPlan(*answer);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(),
              HasSubstr("party 'beta' holds another sampling_secret than party 'alpha'"));
  EXPECT_FALSE(core->Handle(CriticTask(0, 0)).ok());
  ASSERT_TRUE(AttestOwnPlan(*core).ok());
  EXPECT_TRUE(core->Handle(CriticTask(0, 0)).ok());
}

TEST_F(VerticalPartyCoreTest, RoundMessageBeforeAlignmentIsFailedPrecondition) {
  std::unique_ptr<VerticalPartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->Handle(CriticTask(0, 0)).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(VerticalPartyCoreTest, CriticTaskYieldsOneFeaturesReply) {
  std::unique_ptr<VerticalPartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  auto replies = core->Handle(CriticTask(0, 0));
  ASSERT_TRUE(replies.ok()) << replies.status();
  ASSERT_THAT(*replies, SizeIs(1));
  const v1::PartyMessage& reply = (*replies)[0];
  EXPECT_EQ(reply.run_id(), kRunId);
  EXPECT_EQ(reply.round(), 0);
  EXPECT_EQ(reply.step(), 0);
  ASSERT_TRUE(reply.has_features());
  EXPECT_TRUE(
      ValidateTensor(reply.features().h_real(), {kBatch, kFeatureDim}, "h_real", kLimit).ok());
  EXPECT_TRUE(
      ValidateTensor(reply.features().h_fake(), {kBatch, kFeatureDim}, "h_fake", kLimit).ok());

  // The matching gradients complete the step; nothing goes back.
  replies = core->Handle(FeatureGradients(0, 0));
  ASSERT_TRUE(replies.ok()) << replies.status();
  EXPECT_THAT(*replies, SizeIs(0));
  EXPECT_EQ(core->committed_step(), 0);
}

TEST_F(VerticalPartyCoreTest, WronglyShapedCriticTaskIsInvalidArgument) {
  std::unique_ptr<VerticalPartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  auto replies = core->Handle(CriticTask(0, 0, {kBatch, kWidth + 1}));
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(replies.status().message(),
              AllOf(HasSubstr("critic_task.fake_slice"), HasSubstr("[4, 3]"), HasSubstr("[4, 4]")));

  v1::CuratorMessage nan = CriticTask(0, 0);
  const float value = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(
      nan.mutable_critic_task()->mutable_fake_slice()->mutable_data()->data() + 2 * sizeof(float),
      &value, sizeof(float));
  replies = core->Handle(nan);
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(replies.status().message(),
              AllOf(HasSubstr("critic_task.fake_slice"), HasSubstr("non-finite")));

  v1::CuratorMessage no_tensor = Envelope(0, 0);
  no_tensor.mutable_critic_task();
  EXPECT_EQ(core->Handle(no_tensor).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(VerticalPartyCoreTest, OversizeTensorIsResourceExhausted) {
  v1::PartyConfig config = Config();
  config.set_max_message_bytes(64 << 10);
  auto created = VerticalPartyCore::Create(config);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<VerticalPartyCore> core = std::move(*created);
  v1::RegisterResponse response = Registration();
  response.mutable_model()->set_feature_dim(8192);  // 4 x 8192 floats > the 64 KiB limit
  ASSERT_TRUE(core->AcceptRegistration(response).ok());
  ASSERT_TRUE(AlignWith(*core, 2, 9).ok());
  ASSERT_TRUE(AttestOwnPlan(*core).ok());
  // Shaped as expected, so only the size is wrong.
  v1::CuratorMessage message = Envelope(0, 0);
  *message.mutable_feature_gradients()->mutable_grad_real() = Filled({kBatch, 8192}, 0.01f);
  *message.mutable_feature_gradients()->mutable_grad_fake() = Filled({kBatch, 8192}, 0.01f);
  auto replies = core->Handle(message);
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(replies.status().message(), HasSubstr("feature_gradients.grad_real"));
}

TEST_F(VerticalPartyCoreTest, WrongRunIdIsRefused) {
  std::unique_ptr<VerticalPartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  v1::CuratorMessage message = CriticTask(0, 0);
  message.set_run_id("other-run");
  auto replies = core->Handle(message);
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(replies.status().message(), HasSubstr("'other-run'"));
}

TEST_F(VerticalPartyCoreTest, CriticStepOutsideItsRoundIsRefused) {
  std::unique_ptr<VerticalPartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  for (const auto& [round, step] :
       {std::pair<int64_t, int64_t>{0, kNCritic}, {1, 1}, {0, -1}, {-1, -1}}) {
    auto replies = core->Handle(CriticTask(round, step));
    EXPECT_EQ(replies.status().code(), absl::StatusCode::kInvalidArgument) << round << "/" << step;
    EXPECT_THAT(replies.status().message(), HasSubstr("does not belong to round"));
  }
}

TEST_F(VerticalPartyCoreTest, FeatureGradientsForAStepNotPendingAreFailedPrecondition) {
  std::unique_ptr<VerticalPartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  // Nothing pending yet; the "no step" value -1 used internally is no step at all.
  EXPECT_EQ(core->Handle(FeatureGradients(0, 0)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(core->Handle(FeatureGradients(0, -1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(core->Handle(CriticTask(0, 0)).ok());
  auto replies = core->Handle(FeatureGradients(0, 1));
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(replies.status().message(),
              AllOf(HasSubstr("step 1"), HasSubstr("step 0 is pending")));
  ASSERT_TRUE(core->Handle(FeatureGradients(0, 0)).ok());
  // Applied once and committed: the same gradients again (a curator resending its
  // round) change nothing.
  const torch::Tensor weights = core->model()->feat()->parameters()[0].clone();
  auto again = core->Handle(FeatureGradients(0, 0));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(*again, SizeIs(0));
  EXPECT_TRUE(torch::equal(weights, core->model()->feat()->parameters()[0]));
  // The next step's gradients before its task: nothing pending.
  EXPECT_EQ(core->Handle(FeatureGradients(0, 1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(VerticalPartyCoreTest, GeneratorPhaseRepliesWithFeaturesThenSliceGradient) {
  std::unique_ptr<VerticalPartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  // Gradient before any generator task (round -1 is the internal "none" value).
  for (const int64_t round : {int64_t{0}, int64_t{-1}}) {
    EXPECT_EQ(core->Handle(GeneratorFeatureGradient(round)).status().code(),
              absl::StatusCode::kFailedPrecondition)
        << round;
  }
  // The generator phase of a round needs its critic steps done first.
  const absl::Status early = core->Handle(GeneratorTask(0)).status();
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(early.message(), HasSubstr("committed step -1, not 1"));
  for (int64_t step = 0; step < kNCritic; ++step) {
    ASSERT_TRUE(core->Handle(CriticTask(0, step)).ok());
    ASSERT_TRUE(core->Handle(FeatureGradients(0, step)).ok());
  }
  auto replies = core->Handle(GeneratorTask(0));
  ASSERT_TRUE(replies.ok()) << replies.status();
  ASSERT_THAT(*replies, SizeIs(1));
  EXPECT_EQ((*replies)[0].round(), 0);
  EXPECT_EQ((*replies)[0].step(), -1);
  EXPECT_THAT((*replies)[0].generator_features().h().shape(), ElementsAre(kBatch, kFeatureDim));

  EXPECT_EQ(core->Handle(GeneratorFeatureGradient(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  replies = core->Handle(GeneratorFeatureGradient(0));
  ASSERT_TRUE(replies.ok()) << replies.status();
  ASSERT_THAT(*replies, SizeIs(1));
  EXPECT_TRUE(
      ValidateTensor((*replies)[0].slice_gradient().grad(), {kBatch, kWidth}, "grad", kLimit).ok());

  v1::CuratorMessage bad = GeneratorTask(3);
  *bad.mutable_generator_task()->mutable_fake_slice() = Filled({kBatch, 1}, 0);
  EXPECT_THAT(core->Handle(bad).status().message(), HasSubstr("generator_task.fake_slice"));
}

TEST_F(VerticalPartyCoreTest, CuratorErrorAbortsAndFinishedEnds) {
  std::unique_ptr<VerticalPartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  v1::CuratorMessage error = Envelope(0, 0);
  error.mutable_error()->set_message("features.h_real: expected shape [4, 3], got [4, 2]");
  auto replies = core->Handle(error);
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(replies.status().message(), HasSubstr("features.h_real"));

  v1::CuratorMessage empty = Envelope(0, 0);
  EXPECT_EQ(core->Handle(empty).status().code(), absl::StatusCode::kInvalidArgument);
  v1::CuratorMessage chunk = Envelope(0, 0);
  chunk.mutable_chunk()->set_count(1);  // chunks are the session's business, never the core's
  EXPECT_EQ(core->Handle(chunk).status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_FALSE(core->finished());
  v1::CuratorMessage finished = Envelope(3, -1);
  finished.mutable_finished()->set_message("failed, in words a party never parses");
  finished.mutable_finished()->set_succeeded(false);
  replies = core->Handle(finished);
  ASSERT_TRUE(replies.ok());
  EXPECT_THAT(*replies, SizeIs(0));
  EXPECT_TRUE(core->finished());
  EXPECT_FALSE(core->finish_succeeded());
  EXPECT_EQ(core->finish_message(), "failed, in words a party never parses");
}

// ---- restarts: journal and checkpoint ----

// A DP mode with a ledger and its checkpoint in `checkpoint_dir`.
v1::PartyConfig PrivateConfig(const std::string& checkpoint_dir, v1::PrivacyConfig::Mode mode) {
  v1::PartyConfig config = Config("secrets.txt", checkpoint_dir);
  config.mutable_privacy()->set_mode(mode);
  config.mutable_privacy()->set_epsilon(50);
  config.mutable_privacy()->set_ledger(checkpoint_dir + ".ledger");
  EXPECT_TRUE(ResolvePrivacyConfig(config.mutable_privacy()).ok());
  return config;
}

// strict mode: noisy releases.
v1::PartyConfig StrictConfig(const std::string& checkpoint_dir) {
  return PrivateConfig(checkpoint_dir, v1::PrivacyConfig::strict);
}

std::string FreshDir(const std::string& name) {
  const std::string dir = Dir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".ledger");
  return dir;
}

absl::StatusOr<std::unique_ptr<VerticalPartyCore>> AlignedWith(
    const v1::PartyConfig& config, bool resume,
    v1::RegisterResponse registration = Registration()) {
  ASSIGN_OR_RETURN(std::unique_ptr<VerticalPartyCore> core,
                   VerticalPartyCore::Create(config, resume));
  RETURN_IF_ERROR(core->AcceptRegistration(registration));
  RETURN_IF_ERROR(AlignWith(*core, 2, 9));
  RETURN_IF_ERROR(AttestOwnPlan(*core));
  return core;
}

std::string Only(const absl::StatusOr<std::vector<v1::PartyMessage>>& replies) {
  EXPECT_TRUE(replies.ok()) << replies.status();
  if (!replies.ok() || replies->size() != 1) return "";
  return (*replies)[0].SerializeAsString();
}

TEST_F(VerticalPartyCoreTest, RepeatedCriticTaskIsAnsweredFromTheJournalWithIdenticalBytes) {
  auto core = AlignedWith(StrictConfig(FreshDir("journal")), false);
  ASSERT_TRUE(core.ok()) << core.status();
  const std::string first = Only((*core)->Handle(CriticTask(0, 0)));
  ASSERT_FALSE(first.empty());
  const double spent = (*core)->epsilon_spent();
  EXPECT_GT(spent, 0);
  // Asked again (the curator resent its round): the same release, not a fresh one.
  EXPECT_EQ(Only((*core)->Handle(CriticTask(0, 0))), first);
  EXPECT_EQ((*core)->epsilon_spent(), spent);
  // A fresh computation would differ (new noise): the repeat really is the journal's.
  auto other = AlignedWith(StrictConfig(FreshDir("journal-other")), false);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(Only((*other)->Handle(CriticTask(0, 0))), first);
  // The same step with other inputs is refused, never answered with the old noise.
  v1::CuratorMessage changed = CriticTask(0, 0);
  *changed.mutable_critic_task()->mutable_fake_slice() = Filled({kBatch, kWidth}, 0.75f);
  const absl::Status status = (*core)->Handle(changed).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("again with other inputs"));
}

TEST_F(VerticalPartyCoreTest,
       RestartedPartyResumesFromItsCommittedStepWithoutRechargingOrReleasingAgain) {
  const std::string dir = FreshDir("restart");
  std::string step0, step1;
  double spent = 0;
  torch::Tensor weights;
  {
    auto core = AlignedWith(StrictConfig(dir), false);
    ASSERT_TRUE(core.ok()) << core.status();
    step0 = Only((*core)->Handle(CriticTask(0, 0)));
    ASSERT_TRUE((*core)->Handle(FeatureGradients(0, 0)).ok());
    weights = (*core)->model()->feat()->parameters()[0].clone();
    step1 = Only((*core)->Handle(CriticTask(0, 1)));  // released, its update never came
    spent = (*core)->epsilon_spent();
  }  // the process "dies" here: everything it released is already journaled
  auto core = AlignedWith(StrictConfig(dir), /*resume=*/true);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_EQ((*core)->committed_step(), 0);
  EXPECT_EQ((*core)->MakeHello().hello().committed_step(), 0);
  EXPECT_TRUE(torch::equal((*core)->model()->feat()->parameters()[0], weights));
  // The curator resends the round: the same answers, nothing charged again.
  EXPECT_EQ(Only((*core)->Handle(CriticTask(0, 0))), step0);
  ASSERT_TRUE((*core)->Handle(FeatureGradients(0, 0)).ok());
  EXPECT_TRUE(torch::equal((*core)->model()->feat()->parameters()[0], weights));
  EXPECT_EQ(Only((*core)->Handle(CriticTask(0, 1))), step1);
  EXPECT_EQ((*core)->epsilon_spent(), spent);
  ASSERT_TRUE((*core)->Handle(FeatureGradients(0, 1)).ok());
  EXPECT_EQ((*core)->committed_step(), 1);
  // New work is charged as usual.
  ASSERT_FALSE(Only((*core)->Handle(GeneratorTask(0))).empty());
  ASSERT_FALSE(Only((*core)->Handle(GeneratorFeatureGradient(0))).empty());
  ASSERT_FALSE(Only((*core)->Handle(CriticTask(1, 2))).empty());
  EXPECT_GT((*core)->epsilon_spent(), spent);
}

// The last charge line lost (removed by hand, or a copy of the ledger taken just before
// it was appended): the chain still verifies and the checkpoint, committed before it,
// does not count it. The reply it covered is sent again from the journal, and charged
// again, so the ledger spends what it spent before instead of less.
TEST_F(VerticalPartyCoreTest, AReplySentAgainFromTheJournalRestoresAChargeTheLedgerLost) {
  const std::string dir = FreshDir("lost-charge");
  std::string step1;
  double spent = 0;
  {
    auto core = AlignedWith(StrictConfig(dir), false);
    ASSERT_TRUE(core.ok()) << core.status();
    ASSERT_FALSE(Only((*core)->Handle(CriticTask(0, 0))).empty());
    ASSERT_TRUE((*core)->Handle(FeatureGradients(0, 0)).ok());
    step1 = Only((*core)->Handle(CriticTask(0, 1)));  // released, its update never came
    ASSERT_TRUE((*core)->PrepareAhead().ok());         // journaled once sent
    spent = (*core)->epsilon_spent();
  }
  absl::StatusOr<std::string> ledger = ReadFile(dir + ".ledger");
  ASSERT_TRUE(ledger.ok());
  const size_t last = ledger->rfind("\ncharge\t");
  ASSERT_NE(last, std::string::npos);
  ASSERT_EQ(ledger->find('\n', last + 1), ledger->size() - 1);  // the charge of step 1
  ASSERT_TRUE(WriteFileAtomically(dir + ".ledger", ledger->substr(0, last + 1)).ok());
  auto core = AlignedWith(StrictConfig(dir), /*resume=*/true);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_LT((*core)->epsilon_spent(), spent);
  EXPECT_EQ(Only((*core)->Handle(CriticTask(0, 1))), step1);  // from the journal
  EXPECT_DOUBLE_EQ((*core)->epsilon_spent(), spent);
  EXPECT_EQ(*ReadFile(dir + ".ledger"), *ledger);
}

// Generator-round replies carry no noise of their own outside the ensemble modes: they
// are not journaled, and a restarted party recomputes the very same bytes.
TEST_F(VerticalPartyCoreTest, RestartedPartyRecomputesItsGeneratorRoundIdentically) {
  const std::string dir = FreshDir("generator-restart");
  std::string features, slice_gradient;
  {
    auto core = AlignedWith(StrictConfig(dir), false);
    ASSERT_TRUE(core.ok()) << core.status();
    for (int64_t step = 0; step < kNCritic; ++step) {
      ASSERT_FALSE(Only((*core)->Handle(CriticTask(0, step))).empty());
      ASSERT_TRUE((*core)->Handle(FeatureGradients(0, step)).ok());
    }
    features = Only((*core)->Handle(GeneratorTask(0)));
    slice_gradient = Only((*core)->Handle(GeneratorFeatureGradient(0)));
    ASSERT_FALSE(features.empty());
    ASSERT_FALSE(slice_gradient.empty());
  }
  auto core = AlignedWith(StrictConfig(dir), /*resume=*/true);
  ASSERT_TRUE(core.ok()) << core.status();
  for (int64_t step = 0; step < kNCritic; ++step) {  // the curator resends its round
    ASSERT_FALSE(Only((*core)->Handle(CriticTask(0, step))).empty());
    ASSERT_TRUE((*core)->Handle(FeatureGradients(0, step)).ok());
  }
  EXPECT_EQ(Only((*core)->Handle(GeneratorTask(0))), features);
  EXPECT_EQ(Only((*core)->Handle(GeneratorFeatureGradient(0))), slice_gradient);
}

std::string JournalPath(const std::string& dir) { return dir + "/replies.journal"; }

// What an OS crash may leave of the journal: the entries durable by then.
void CutJournal(const std::string& dir, uintmax_t size) {
  ASSERT_LT(size, std::filesystem::file_size(JournalPath(dir)));
  std::filesystem::resize_file(JournalPath(dir), size);
}

// dpsgd: critic features carry no noise of their own. A reply is sent before its
// journal entry is durable; if a crash loses the entry, the restarted party recomputes
// the same bytes from its committed critic, and the step's charge is not repeated.
TEST_F(VerticalPartyCoreTest,
       RestartedDpsgdPartyRecomputesAnUnjournaledCriticReplyIdenticallyWithoutRecharging) {
  const std::string dir = FreshDir("dpsgd-restart");
  std::string step0, step1;
  uintmax_t durable = 0;
  double spent = 0;
  {
    auto core = AlignedWith(PrivateConfig(dir, v1::PrivacyConfig::dpsgd), false);
    ASSERT_TRUE(core.ok()) << core.status();
    step0 = Only((*core)->Handle(CriticTask(0, 0)));
    ASSERT_TRUE((*core)->Handle(FeatureGradients(0, 0)).ok());
    // Journaled once sent (before the next message) and flushed before step 0 is committed.
    durable = std::filesystem::file_size(JournalPath(dir));
    step1 = Only((*core)->Handle(CriticTask(0, 1)));  // released; its entry not yet needed durable
    ASSERT_TRUE((*core)->PrepareAhead().ok());  // as the session does once it is sent: journals it
    spent = (*core)->epsilon_spent();
    EXPECT_GT(spent, 0);
  }
  CutJournal(dir, durable);
  auto core = AlignedWith(PrivateConfig(dir, v1::PrivacyConfig::dpsgd), /*resume=*/true);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_EQ((*core)->committed_step(), 0);
  EXPECT_EQ(Only((*core)->Handle(CriticTask(0, 0))), step0);  // from the journal
  ASSERT_TRUE((*core)->Handle(FeatureGradients(0, 0)).ok());  // already committed: skipped
  EXPECT_EQ(Only((*core)->Handle(CriticTask(0, 1))), step1);  // recomputed
  EXPECT_EQ((*core)->epsilon_spent(), spent);
  auto ledger = ReadFile(dir + ".ledger");
  ASSERT_TRUE(ledger.ok());
  size_t charges_of_step1 = 0;
  for (size_t at = ledger->find("charge\tround=1\t"); at != std::string::npos;
       at = ledger->find("charge\tround=1\t", at + 1)) {
    ++charges_of_step1;
  }
  EXPECT_EQ(charges_of_step1, 1u);
}

// Mode none: only a round's last critic update is committed. A party that crashes in
// the middle of a round resumes at the end of the previous one and, fed the round the
// curator resends, recomputes the same replies and reaches the same critic.
TEST_F(VerticalPartyCoreTest, RestartedPartyInModeNoneReplaysTheRoundIdentically) {
  const std::string dir = FreshDir("none-restart");
  std::string step2, step3;
  uintmax_t durable = 0;
  torch::Tensor weights;
  {
    auto core = AlignedWith(Config("secrets.txt", dir), false);
    ASSERT_TRUE(core.ok()) << core.status();
    for (int64_t step = 0; step < kNCritic; ++step) {
      ASSERT_FALSE(Only((*core)->Handle(CriticTask(0, step))).empty());
      ASSERT_TRUE((*core)->Handle(FeatureGradients(0, step)).ok());
    }
    ASSERT_FALSE(Only((*core)->Handle(GeneratorTask(0))).empty());
    ASSERT_FALSE(Only((*core)->Handle(GeneratorFeatureGradient(0))).empty());
    durable = std::filesystem::file_size(JournalPath(dir));
    step2 = Only((*core)->Handle(CriticTask(1, 2)));
    ASSERT_TRUE((*core)->Handle(FeatureGradients(1, 2)).ok());
    EXPECT_EQ((*core)->committed_step(), 2);
    weights = (*core)->model()->feat()->parameters()[0].clone();
    step3 = Only((*core)->Handle(CriticTask(1, 3)));
  }
  CutJournal(dir, durable);
  auto core = AlignedWith(Config("secrets.txt", dir), /*resume=*/true);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_EQ((*core)->committed_step(), kNCritic - 1);  // step 2 was never made durable
  EXPECT_FALSE(torch::equal((*core)->model()->feat()->parameters()[0], weights));
  EXPECT_EQ(Only((*core)->Handle(CriticTask(1, 2))), step2);
  ASSERT_TRUE((*core)->Handle(FeatureGradients(1, 2)).ok());
  EXPECT_TRUE(torch::equal((*core)->model()->feat()->parameters()[0], weights));
  EXPECT_EQ(Only((*core)->Handle(CriticTask(1, 3))), step3);
}

// A curator whose durable checkpoint lags (checkpoint_every > 1) replays a round the
// party has moved past: its recomputed generator-round replies were journaled when the
// critic changed, so even a restarted party answers them with the same bytes.
TEST_F(VerticalPartyCoreTest,
       GeneratorRoundRepliesSurviveTheCriticMovingOnWhileTheCuratorMayReplayThem) {
  const std::string dir = FreshDir("generator-lagging-checkpoint");
  std::vector<std::string> round0;
  {
    auto core = AlignedWith(PrivateConfig(dir, v1::PrivacyConfig::dpsgd), false);
    ASSERT_TRUE(core.ok()) << core.status();
    for (int64_t step = 0; step < kNCritic; ++step) {
      round0.push_back(Only((*core)->Handle(CriticTask(0, step))));
      ASSERT_TRUE((*core)->Handle(FeatureGradients(0, step)).ok());
    }
    round0.push_back(Only((*core)->Handle(GeneratorTask(0))));
    round0.push_back(Only((*core)->Handle(GeneratorFeatureGradient(0))));
    // Round 1 while the curator's checkpoint is still at round 0 (durable_round 0).
    ASSERT_FALSE(Only((*core)->Handle(CriticTask(1, kNCritic))).empty());
    ASSERT_TRUE((*core)->Handle(FeatureGradients(1, kNCritic)).ok());
  }
  auto core = AlignedWith(PrivateConfig(dir, v1::PrivacyConfig::dpsgd), /*resume=*/true);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_EQ((*core)->committed_step(), kNCritic);
  std::vector<std::string> replayed;
  for (int64_t step = 0; step < kNCritic; ++step) {  // the resumed curator replays round 0
    replayed.push_back(Only((*core)->Handle(CriticTask(0, step))));
    ASSERT_TRUE((*core)->Handle(FeatureGradients(0, step)).ok());
  }
  replayed.push_back(Only((*core)->Handle(GeneratorTask(0))));
  replayed.push_back(Only((*core)->Handle(GeneratorFeatureGradient(0))));
  EXPECT_EQ(replayed, round0);
}

TEST_F(VerticalPartyCoreTest, CheckpointIsRefusedWithoutResumeRequiredWithItAndMustMatchTheRun) {
  const std::string dir = FreshDir("refuse");
  ASSERT_TRUE(AlignedWith(Config("secrets.txt", dir), false).ok());
  absl::Status status = AlignedWith(Config("secrets.txt", dir), false).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("already exists"), HasSubstr("--resume")));

  status = AlignedWith(Config("secrets.txt", FreshDir("refuse-empty")), true).status();
  EXPECT_THAT(status.message(), HasSubstr("--resume: there is no checkpoint"));

  v1::RegisterResponse other_settings = Registration();
  other_settings.mutable_training()->set_gp_lambda(3);
  status = AlignedWith(Config("secrets.txt", dir), true, other_settings).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("configuration"));
  v1::RegisterResponse other_run = Registration();
  other_run.set_run_id("another-run");
  EXPECT_THAT(AlignedWith(Config("secrets.txt", dir), true, other_run).status().message(),
              HasSubstr("another run"));
  EXPECT_TRUE(AlignedWith(Config("secrets.txt", dir), true).ok());
}

// The party secret its networks and shards were drawn from is kept beside the
// checkpoint, readable by the party alone; a resume without it (or with a damaged one)
// is refused, naming the file.
TEST_F(VerticalPartyCoreTest, ThePartySecretIsKeptPrivatelyAndResumeNeedsIt) {
  const std::string dir = FreshDir("party-secret");
  ASSERT_TRUE(AlignedWith(Config("secrets.txt", dir), false).ok());
  const std::string path = dir + "/party.secret";
  const absl::StatusOr<std::string> secret = ReadFile(path);
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_EQ(secret->size(), 64u);
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // Another fresh party draws another secret.
  const std::string other = FreshDir("party-secret-2");
  ASSERT_TRUE(AlignedWith(Config("secrets.txt", other), false).ok());
  EXPECT_NE(*ReadFile(other + "/party.secret"), *secret);

  ASSERT_TRUE(WriteFileAtomically(path, "not-a-secret").ok());
  absl::Status status = AlignedWith(Config("secrets.txt", dir), true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("party.secret"));
  std::filesystem::remove(path);
  status = AlignedWith(Config("secrets.txt", dir), true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("party.secret"));
  ASSERT_TRUE(WriteFileAtomically(path, *secret).ok());
  EXPECT_TRUE(AlignedWith(Config("secrets.txt", dir), true).ok());
}

// A checkpoint directory lost while the ledger was kept: a fresh start would release
// again under charges the ledger already holds, so it is refused and the ledger kept.
TEST_F(VerticalPartyCoreTest, FreshStartOnAChargedLedgerIsRefusedAndTheLedgerKept) {
  const std::string dir = FreshDir("charged");
  {
    auto core = AlignedWith(StrictConfig(dir), false);
    ASSERT_TRUE(core.ok()) << core.status();
    ASSERT_FALSE(Only((*core)->Handle(CriticTask(0, 0))).empty());
    EXPECT_GT((*core)->epsilon_spent(), 0);
  }
  const absl::StatusOr<std::string> before = ReadFile(dir + ".ledger");
  ASSERT_TRUE(before.ok()) << before.status();
  std::filesystem::remove_all(dir);
  const absl::Status status = AlignedWith(StrictConfig(dir), false).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("already holds"), HasSubstr("unit-run"),
                                      HasSubstr("--resume"), HasSubstr("new ledger")));
  EXPECT_EQ(ReadFile(dir + ".ledger").value_or(""), *before);
  // A new run's ledger (another path) starts afresh.
  EXPECT_TRUE(AlignedWith(StrictConfig(FreshDir("charged-new")), false).ok());
}

// A strict party that charged and committed critic step 0 in `dir` (ledger dir.ledger).
void RunOneCriticStep(const std::string& dir) {
  auto core = AlignedWith(StrictConfig(dir), false);
  ASSERT_TRUE(core.ok()) << core.status();
  ASSERT_FALSE(Only((*core)->Handle(CriticTask(0, 0))).empty());
  ASSERT_TRUE((*core)->Handle(FeatureGradients(0, 0)).ok());
  ASSERT_GT((*core)->epsilon_spent(), 0);
}

// The ledger is bound to the checkpoint: a resume whose ledger is lost would start an
// empty one and under-report what the checkpoint's releases spent, so it is refused,
// naming the ledger, and no ledger is created.
TEST_F(VerticalPartyCoreTest, ResumeRefusesALostLedger) {
  const std::string dir = FreshDir("lost-ledger");
  ASSERT_NO_FATAL_FAILURE(RunOneCriticStep(dir));
  const std::string ledger = dir + ".ledger";
  ASSERT_TRUE(std::filesystem::remove(ledger));
  const absl::Status status = AlignedWith(StrictConfig(dir), /*resume=*/true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("--resume"), HasSubstr(ledger), HasSubstr("does not exist")));
  EXPECT_FALSE(std::filesystem::exists(ledger));
}

// Another run's ledger, even of the same run id and settings (the run started over
// elsewhere, another party's copy), is not the one the checkpoint was charged to.
TEST_F(VerticalPartyCoreTest, ResumeRefusesAnotherRunsLedger) {
  const std::string dir = FreshDir("foreign-ledger");
  const std::string other = FreshDir("foreign-ledger-other");
  ASSERT_NO_FATAL_FAILURE(RunOneCriticStep(dir));
  ASSERT_NO_FATAL_FAILURE(RunOneCriticStep(other));
  std::filesystem::copy_file(other + ".ledger", dir + ".ledger",
                             std::filesystem::copy_options::overwrite_existing);
  const absl::Status status = AlignedWith(StrictConfig(dir), /*resume=*/true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(dir + ".ledger"), HasSubstr("is not the ledger checkpoint"),
                    HasSubstr("under-report")));
}

// A curator resumed from a checkpoint of another run (same id and settings) may announce
// success at once: a party whose critic did not take the plan's every step refuses it.
TEST_F(VerticalPartyCoreTest, ASuccessIsTakenOnlyOnceTheCriticTookThePlansLastStep) {
  std::unique_ptr<VerticalPartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  v1::CuratorMessage finished = Envelope(3, -1);
  finished.mutable_finished()->set_succeeded(true);
  const absl::Status early = core->Handle(finished).status();
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(early.message(), HasSubstr("committed step -1 of 5"));
  EXPECT_FALSE(core->finished());

  for (int64_t round = 0; round < 3; ++round) {
    for (int64_t k = 0; k < kNCritic; ++k) {
      const int64_t step = round * kNCritic + k;
      ASSERT_FALSE(Only(core->Handle(CriticTask(round, step))).empty());
      ASSERT_TRUE(core->Handle(FeatureGradients(round, step)).ok());
    }
    ASSERT_FALSE(Only(core->Handle(GeneratorTask(round))).empty());
    ASSERT_TRUE(core->Handle(GeneratorFeatureGradient(round)).ok());
  }
  const auto replies = core->Handle(finished);
  ASSERT_TRUE(replies.ok()) << replies.status();
  EXPECT_TRUE(core->finish_succeeded());
}

// A damaged newest slot leaves the older one to resume from; the party says which slot
// and why, and a curator then asking past the older state is told the same.
TEST_F(VerticalPartyCoreTest, ADamagedNewestSlotIsNamedWhenTheOlderStateFallsShort) {
  const std::string dir = FreshDir("damaged-slot");
  ASSERT_NO_FATAL_FAILURE(RunOneCriticStep(dir));  // state.0: step -1, state.1: step 0
  const std::string slot = dir + "/state.1";
  absl::StatusOr<std::string> bytes = ReadFile(slot);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  bytes->back() ^= 1;
  ASSERT_TRUE(WriteFileAtomically(slot, *bytes).ok());
  auto core = AlignedWith(StrictConfig(dir), /*resume=*/true);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_EQ((*core)->committed_step(), -1);
  const absl::Status status = (*core)->Handle(CriticTask(0, 1)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("older checkpoint slot"), HasSubstr(slot),
                                      HasSubstr("checksum mismatch")));
}

// party.secret keys the party's networks and shards: a state resumed under another one
// would move records between shards mid-run.
TEST_F(VerticalPartyCoreTest, ResumeRefusesAReplacedPartySecret) {
  const std::string dir = FreshDir("replaced-secret");
  ASSERT_NO_FATAL_FAILURE(RunOneCriticStep(dir));
  ASSERT_TRUE(WritePrivateFile(dir + "/party.secret", std::string(64, 'e')).ok());
  const absl::Status status = AlignedWith(StrictConfig(dir), /*resume=*/true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("belongs to another set of secrets"),
                                      HasSubstr("party.secret")));
}

// The curator started the run afresh (or resumed another start's checkpoint) under the
// same run id and settings: this party's state belongs to the start it joined.
TEST_F(VerticalPartyCoreTest, ResumeRefusesAnotherStartOfTheRun) {
  const std::string dir = FreshDir("other-start");
  ASSERT_NO_FATAL_FAILURE(RunOneCriticStep(dir));
  v1::RegisterResponse restarted = Registration();
  restarted.set_run_nonce(std::string(64, 'f'));
  const absl::Status status = AlignedWith(StrictConfig(dir), /*resume=*/true, restarted).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("another start of run"), HasSubstr(dir + "/run.nonce")));
  // A curator naming no start at all is refused before anything else.
  v1::RegisterResponse unnamed = Registration();
  unnamed.clear_run_nonce();
  EXPECT_THAT(AlignedWith(StrictConfig(FreshDir("no-start")), false, unnamed).status().message(),
              HasSubstr("no valid run nonce"));
}

// An older copy of the run's own ledger lacks charges the checkpoint's state relies on.
TEST_F(VerticalPartyCoreTest, ResumeRefusesAnOlderCopyOfItsLedger) {
  const std::string dir = FreshDir("old-ledger");
  const std::string ledger = dir + ".ledger";
  const std::string copy = Dir() + "/old-ledger.copy";
  {
    auto core = AlignedWith(StrictConfig(dir), false);
    ASSERT_TRUE(core.ok()) << core.status();
    ASSERT_FALSE(Only((*core)->Handle(CriticTask(0, 0))).empty());
    std::filesystem::copy_file(ledger, copy, std::filesystem::copy_options::overwrite_existing);
    ASSERT_TRUE((*core)->Handle(FeatureGradients(0, 0)).ok());
    ASSERT_FALSE(Only((*core)->Handle(CriticTask(0, 1))).empty());
    ASSERT_TRUE((*core)->Handle(FeatureGradients(0, 1)).ok());
    ASSERT_TRUE((*core)->Handle(GeneratorTask(0)).ok());  // waits for step 1's commit
  }
  std::filesystem::copy_file(copy, ledger, std::filesystem::copy_options::overwrite_existing);
  const absl::Status status = AlignedWith(StrictConfig(dir), /*resume=*/true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("holds 1 charges"), HasSubstr("committed after 2"),
                                      HasSubstr("older copy")));
}

// Label pairs: the holder's label release, kept in labels.release, is bound by its
// digest to the key-0 charge (as is the marginal draw in the checkpoint). A resume sends
// the kept bytes again; with the file deleted or altered it is refused, never redrawn.
TEST_F(VerticalPartyCoreTest, KeptLabelReleaseIsBoundToItsChargeAndNeverRedrawn) {
  const std::string dir = FreshDir("label-release");
  v1::RegisterResponse registration = Registration();
  registration.mutable_training()->set_label_column("a");
  registration.mutable_training()->set_marginal_weight(1);
  const std::string path = dir + "/labels.release";
  std::string sent;
  {
    auto core = AlignedWith(StrictConfig(dir), false, registration);
    ASSERT_TRUE(core.ok()) << core.status();
    auto release = (*core)->MakeShareLabelsRequest();
    ASSERT_TRUE(release.ok()) << release.status();
    ASSERT_EQ(release->labels_size(), 8);
    sent = release->SerializeAsString();
  }
  const absl::StatusOr<std::string> ledger = ReadFile(dir + ".ledger");
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_THAT(*ledger, AllOf(HasSubstr("\nrelease\tround=0\tname=marginals\tsha256="),
                             HasSubstr("\nrelease\tround=0\tname=labels.release\tsha256=")));
  {
    auto resumed = AlignedWith(StrictConfig(dir), /*resume=*/true, registration);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    auto release = (*resumed)->MakeShareLabelsRequest();
    ASSERT_TRUE(release.ok()) << release.status();
    EXPECT_EQ(release->SerializeAsString(), sent);
  }
  v1::ShareLabelsRequest altered;
  ASSERT_TRUE(altered.ParseFromString(sent));
  altered.set_labels(0, 1 - altered.labels(0));
  for (const bool remove : {true, false}) {
    if (remove) {
      ASSERT_TRUE(std::filesystem::remove(path));
    } else {
      ASSERT_TRUE(WriteFileAtomically(path, altered.SerializeAsString()).ok());
    }
    auto resumed = AlignedWith(StrictConfig(dir), /*resume=*/true, registration);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    const absl::Status status = (*resumed)->MakeShareLabelsRequest().status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(status.message(),
                AllOf(HasSubstr(path), HasSubstr(remove ? "is missing" : "is not the release"),
                      HasSubstr("without being counted")));
    EXPECT_EQ(std::filesystem::exists(path), !remove);  // nothing drawn in its place
  }
}

// gswgan: the party charges each critic step's feature release and, before the slice
// gradient leaves, the round's per-row releases, under increasing ledger keys.
TEST_F(VerticalPartyCoreTest, EnsembleModeChargesFeatureAndRowReleases) {
  const std::string ledger = Dir() + "/gswgan.ledger";
  std::remove(ledger.c_str());
  v1::PartyConfig config = Config();
  config.mutable_privacy()->set_mode(v1::PrivacyConfig::gswgan);
  config.mutable_privacy()->set_epsilon(10);
  config.mutable_privacy()->set_ledger(ledger);
  config.mutable_privacy()->mutable_ensemble()->set_shards(2);
  ASSERT_TRUE(ResolvePrivacyConfig(config.mutable_privacy()).ok());
  auto core = VerticalPartyCore::Create(config);
  ASSERT_TRUE(core.ok()) << core.status();
  ASSERT_TRUE((*core)->AcceptRegistration(Registration()).ok());
  ASSERT_TRUE(AlignWith(**core, 2, 9).ok());
  ASSERT_TRUE(AttestOwnPlan(**core).ok());
  EXPECT_NEAR((*core)->epsilon_planned(), 10, 1e-3);
  for (int64_t step = 0; step < kNCritic; ++step) {
    auto replies = (*core)->Handle(CriticTask(0, step));
    ASSERT_TRUE(replies.ok()) << replies.status();
    ASSERT_TRUE((*core)->Handle(FeatureGradients(0, step)).ok());
  }
  const double after_critic = (*core)->epsilon_spent();
  EXPECT_GT(after_critic, 0);
  ASSERT_TRUE((*core)->Handle(GeneratorTask(0)).ok());
  EXPECT_EQ((*core)->epsilon_spent(), after_critic);  // synthetic features: nothing charged
  auto replies = (*core)->Handle(GeneratorFeatureGradient(0));
  ASSERT_TRUE(replies.ok()) << replies.status();
  EXPECT_TRUE(
      ValidateTensor((*replies)[0].slice_gradient().grad(), {kBatch, kWidth}, "grad", kLimit).ok());
  EXPECT_GT((*core)->epsilon_spent(), after_critic);
  auto text = ReadFile(ledger);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(
      *text, AllOf(HasSubstr("charge\tround=0\tsteps=1\t"), HasSubstr("charge\tround=1\tsteps=1\t"),
                   HasSubstr("charge\tround=2\tsteps=8\tq=0.5\t")));  // K·B rows at 1/E
}

// A curator asking past the plan (here with a budget the extra step would still fit:
// an explicit noise multiplier plans far below it) is refused before anything is
// charged or computed.
TEST_F(VerticalPartyCoreTest, ARoundPastThePlanIsRefusedAndNothingCharged) {
  const std::string dir = FreshDir("past-the-plan");
  v1::PartyConfig config = StrictConfig(dir);
  config.mutable_privacy()->set_noise_multiplier(5);
  auto core = AlignedWith(config, false);
  ASSERT_TRUE(core.ok()) << core.status();
  const int64_t rounds = Registration().training().rounds();
  for (int64_t round = 0; round < rounds; ++round) {
    for (int64_t step = round * kNCritic; step < (round + 1) * kNCritic; ++step) {
      ASSERT_FALSE(Only((*core)->Handle(CriticTask(round, step))).empty()) << step;
      ASSERT_TRUE((*core)->Handle(FeatureGradients(round, step)).ok()) << step;
    }
    ASSERT_FALSE(Only((*core)->Handle(GeneratorTask(round))).empty()) << round;
    ASSERT_FALSE(Only((*core)->Handle(GeneratorFeatureGradient(round))).empty()) << round;
  }
  const absl::StatusOr<std::string> ledger = ReadFile(dir + ".ledger");
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  const double spent = (*core)->epsilon_spent();
  for (const v1::CuratorMessage& past :
       {CriticTask(rounds, rounds * kNCritic), FeatureGradients(rounds, rounds * kNCritic),
        GeneratorTask(rounds), GeneratorFeatureGradient(rounds)}) {
    const absl::Status status = (*core)->Handle(past).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << past.payload_case();
    EXPECT_THAT(status.message(),
                AllOf(HasSubstr(absl::StrCat("round ", rounds)),
                      HasSubstr(absl::StrCat("rounds 0 to ", rounds - 1)),
                      HasSubstr("nothing charged")));
  }
  EXPECT_EQ(ReadFile(dir + ".ledger").value_or(""), *ledger);
  EXPECT_EQ((*core)->epsilon_spent(), spent);
}

// gswgan charges the slice gradient's row releases: a gradient for a round whose
// generator features are not pending is refused before that charge.
TEST_F(VerticalPartyCoreTest, ASliceGradientForARoundNotPendingChargesNothing) {
  const std::string dir = FreshDir("not-pending");
  v1::PartyConfig config = PrivateConfig(dir, v1::PrivacyConfig::gswgan);
  config.mutable_privacy()->mutable_ensemble()->set_shards(2);
  auto core = AlignedWith(config, false);
  ASSERT_TRUE(core.ok()) << core.status();
  for (int64_t step = 0; step < kNCritic; ++step) {
    ASSERT_FALSE(Only((*core)->Handle(CriticTask(0, step))).empty()) << step;
    ASSERT_TRUE((*core)->Handle(FeatureGradients(0, step)).ok()) << step;
  }
  const absl::StatusOr<std::string> ledger = ReadFile(dir + ".ledger");
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  for (const int64_t round : {int64_t{0}, int64_t{1}}) {
    const absl::Status status = (*core)->Handle(GeneratorFeatureGradient(round)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << round;
    EXPECT_THAT(status.message(), HasSubstr("no round is pending"));
  }
  EXPECT_EQ(ReadFile(dir + ".ledger").value_or(""), *ledger);
}

TEST_F(VerticalPartyCoreTest, EnsembleModeRefusesMoreShardsThanRecords) {
  v1::PartyConfig config = Config();
  config.mutable_privacy()->set_mode(v1::PrivacyConfig::pate);
  config.mutable_privacy()->set_epsilon(10);
  config.mutable_privacy()->set_ledger(Dir() + "/pate.ledger");
  config.mutable_privacy()->mutable_ensemble()->set_shards(9);
  ASSERT_TRUE(ResolvePrivacyConfig(config.mutable_privacy()).ok());
  auto core = VerticalPartyCore::Create(config);
  ASSERT_TRUE(core.ok()) << core.status();
  ASSERT_TRUE((*core)->AcceptRegistration(Registration()).ok());
  EXPECT_THAT(AlignWith(**core, 2, 9).message(), HasSubstr("exceeds the 8 aligned records"));
}

TEST_F(VerticalPartyCoreTest, AResumedPartySendsTheListItSentBefore) {
  const std::string dir = FreshDir("resume-list");
  auto first = VerticalPartyCore::Create(Config("secrets.txt", dir));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE((*first)->AcceptRegistration(Registration()).ok());
  ASSERT_TRUE(AlignWith(**first, 2, 9).ok());
  auto resumed = VerticalPartyCore::Create(Config("secrets.txt", dir), /*resume=*/true);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_TRUE((*resumed)->AcceptRegistration(Registration()).ok());
  const absl::StatusOr<v1::AlignRequest> before = (*first)->MakeAlignRequest();
  const absl::StatusOr<v1::AlignRequest> after = (*resumed)->MakeAlignRequest();
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(after->SerializeAsString(), before->SerializeAsString());
}

TEST_F(VerticalPartyCoreTest, AnswerAlignBlindsOneListPerHopAcrossARestart) {
  const std::string dir = FreshDir("one-list-per-hop");
  // Aligned with beta's list of r0..r9 (Positions).
  auto core = AlignedWith(Config("secrets.txt", dir), false);
  ASSERT_TRUE(core.ok()) << core.status();
  const v1::AlignResponse first =
      BlindingTaskOf(PsiParty::Create("beta-secret", Ids(0, 9))->own_list());
  const absl::StatusOr<std::optional<v1::AlignRequest>> answer = (*core)->AnswerAlign(first);
  ASSERT_TRUE(answer.ok()) << answer.status();
  // Another genuine list of beta's (say, from a beta that restarted with another
  // secret): authenticated, but a second list for the hop.
  const v1::AlignResponse second =
      BlindingTaskOf(PsiParty::Create("other-beta-secret", Ids(0, 9))->own_list());
  auto refuses_second = [&](VerticalPartyCore& party) {
    const absl::Status status = party.AnswerAlign(second).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(status.message(), HasSubstr("refusing a second list to blind for alignment hop 1"));
    // The same list again (a retry) gets the same answer.
    const absl::StatusOr<std::optional<v1::AlignRequest>> again = party.AnswerAlign(first);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ((*again)->SerializeAsString(), (*answer)->SerializeAsString());
  };
  refuses_second(**core);
  auto resumed = VerticalPartyCore::Create(Config("secrets.txt", dir), /*resume=*/true);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_TRUE((*resumed)->AcceptRegistration(Registration()).ok());
  const absl::StatusOr<v1::AlignRequest> own = (*resumed)->MakeAlignRequest();
  ASSERT_TRUE(own.ok()) << own.status();
  refuses_second(**resumed);
}

// Alpha stopped after its list left and after it blinded beta's (hop 1), before it had
// a checkpoint, then started again (without --resume: there is nothing to resume). It
// sends the identical list, beta's list gets the identical answer, and the run goes on.
TEST_F(VerticalPartyCoreTest, APartyRestartedDuringAlignmentSendsItsListsAgainAndAligns) {
  const std::string dir = FreshDir("restart-mid-alignment");
  const v1::AlignResponse task =
      BlindingTaskOf(PsiParty::Create("beta-secret", Ids(0, 9))->own_list());
  auto lists = [&](VerticalPartyCore& core) -> std::pair<std::string, std::string> {
    const absl::StatusOr<v1::AlignRequest> own = core.MakeAlignRequest();
    EXPECT_TRUE(own.ok()) << own.status();
    const absl::StatusOr<std::optional<v1::AlignRequest>> answer = core.AnswerAlign(task);
    EXPECT_TRUE(answer.ok() && answer->has_value()) << answer.status();
    if (!own.ok() || !answer.ok() || !answer->has_value()) return {};
    return {own->SerializeAsString(), (*answer)->SerializeAsString()};
  };
  std::pair<std::string, std::string> before;
  {
    auto stopped = VerticalPartyCore::Create(Config("secrets.txt", dir));
    ASSERT_TRUE(stopped.ok()) << stopped.status();
    ASSERT_TRUE((*stopped)->AcceptRegistration(Registration()).ok());
    before = lists(**stopped);
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/party.secret"));
  auto restarted = VerticalPartyCore::Create(Config("secrets.txt", dir));
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  ASSERT_TRUE((*restarted)->AcceptRegistration(Registration()).ok());
  EXPECT_EQ(lists(**restarted), before);
  ASSERT_TRUE(AlignWith(**restarted, 2, 9).ok());
  ASSERT_TRUE(AttestOwnPlan(**restarted).ok());
  EXPECT_FALSE(Only((*restarted)->Handle(CriticTask(0, 0))).empty());

  // Another run draws another secret (the lists of two runs are not linkable), and the
  // first run's is still kept.
  v1::RegisterResponse other_run = Registration();
  other_run.set_run_id("another-run");
  auto other = VerticalPartyCore::Create(Config("secrets.txt", FreshDir("restart-other-run")));
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->AcceptRegistration(other_run).ok());
  const absl::StatusOr<v1::AlignRequest> other_list = (*other)->MakeAlignRequest();
  ASSERT_TRUE(other_list.ok()) << other_list.status();
  v1::AlignRequest first;
  ASSERT_TRUE(first.ParseFromString(before.first));
  EXPECT_NE(other_list->elements(0), first.elements(0));
}

// --resume finds no checkpoint of a party stopped during alignment, and says what to do.
TEST_F(VerticalPartyCoreTest, ResumingAPartyStoppedDuringAlignmentSaysToStartItWithoutResume) {
  const std::string dir = FreshDir("resume-mid-alignment");
  {
    auto stopped = VerticalPartyCore::Create(Config("secrets.txt", dir));
    ASSERT_TRUE(stopped.ok()) << stopped.status();
    ASSERT_TRUE((*stopped)->AcceptRegistration(Registration()).ok());
    ASSERT_TRUE((*stopped)->MakeAlignRequest().ok());
  }
  auto resumed = VerticalPartyCore::Create(Config("secrets.txt", dir), /*resume=*/true);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_TRUE((*resumed)->AcceptRegistration(Registration()).ok());
  const absl::Status status = (*resumed)->MakeAlignRequest().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("stopped during the alignment of run 'unit-run'"),
                                      HasSubstr("start it without --resume")));
}

// A measured-marginals party stopped before its list left, or during alignment, has no
// party.secret (written once aligned): --resume says what happened and what to do, not
// that the file is missing.
TEST_F(VerticalPartyCoreTest,
       ResumingAMarginalsPartyStoppedBeforeAlignmentEndedSaysToStartItAgain) {
  v1::PartyConfig config = Config();
  config.mutable_privacy()->set_mode(v1::PrivacyConfig::marginals);
  auto resume = [&]() -> absl::Status {
    auto core = MarginalsPartyCore::Create(config, /*resume=*/true);
    if (!core.ok()) return core.status();
    RETURN_IF_ERROR((*core)->AcceptRegistration(Registration()));
    return (*core)->MakeAlignRequest().status();
  };
  absl::Status status = resume();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("nothing of run 'unit-run' to resume"),
                    HasSubstr("start it without --resume"), Not(HasSubstr("party.secret"))));
  {
    auto stopped = MarginalsPartyCore::Create(config);
    ASSERT_TRUE(stopped.ok()) << stopped.status();
    ASSERT_TRUE((*stopped)->AcceptRegistration(Registration()).ok());
    ASSERT_TRUE((*stopped)->MakeAlignRequest().ok());  // its list left: the secret is kept
  }
  status = resume();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("stopped during the alignment of run 'unit-run'"),
                    HasSubstr("start it without --resume"), Not(HasSubstr("party.secret"))));
}

// A curator double: registers alpha in Registration()'s run, answers its Align calls with
// `tasks` in turn, and fails the run when alpha refuses; it keeps what alpha sent.
class ScriptedCurator : public CuratorLink {
 public:
  struct Log {
    std::vector<v1::AlignRequest> aligns;
    std::vector<std::string> refusals;
  };
  ScriptedCurator(std::vector<v1::AlignResponse> tasks, Log* log)
      : tasks_(std::move(tasks)), log_(log) {}

  absl::Status Connect(absl::Duration) override { return absl::OkStatus(); }
  absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest&,
                                                absl::Duration) override {
    return Registration();
  }
  absl::StatusOr<v1::AlignResponse> Align(const v1::AlignRequest& request,
                                          absl::Duration) override {
    log_->aligns.push_back(request);
    if (next_ == tasks_.size()) return absl::DeadlineExceededError("no more tasks");
    return tasks_[next_++];
  }
  absl::StatusOr<v1::AttestPlanResponse> AttestPlan(const v1::AttestPlanRequest& request,
                                                    absl::Duration) override {
    log_->refusals.push_back(request.refusal());
    return absl::FailedPreconditionError("the run failed");
  }
  absl::StatusOr<v1::ShareLabelsResponse> ShareLabels(const v1::ShareLabelsRequest&,
                                                      absl::Duration) override {
    return absl::UnimplementedError("ShareLabels");
  }
  absl::StatusOr<v1::LabelPairsResponse> ReleaseLabelPairs(const v1::LabelPairsRequest&,
                                                           absl::Duration) override {
    return absl::UnimplementedError("ReleaseLabelPairs");
  }
  absl::StatusOr<v1::MarginalsResponse> ReleaseMarginals(const v1::MarginalsRequest&,
                                                         absl::Duration) override {
    return absl::UnimplementedError("ReleaseMarginals");
  }
  absl::StatusOr<std::unique_ptr<TrainStream>> OpenTrain() override {
    return absl::UnimplementedError("OpenTrain");
  }
  void Cancel() override {}

 private:
  const std::vector<v1::AlignResponse> tasks_;
  size_t next_ = 0;
  Log* log_;
};

// Runs alpha's session against a curator double handing out `tasks`.
absl::Status RunAgainst(std::vector<v1::AlignResponse> tasks, ScriptedCurator::Log* log,
                        const v1::PartyConfig& config = Config()) {
  ASSIGN_OR_RETURN(std::unique_ptr<VerticalPartyCore> core, VerticalPartyCore::Create(config));
  PartySession session(config, core.get(),
                       std::make_unique<ScriptedCurator>(std::move(tasks), log));
  return session.Run();
}

TEST_F(VerticalPartyCoreTest, APartyEndsTheRunOnADictionaryPaddedBlindingTask) {
  const PsiParty beta = *PsiParty::Create("beta-secret", Ids(0, 3));
  v1::AlignResponse padded = BlindingTaskOf(beta.own_list());
  for (const std::string& guess : PsiParty::Create("curator-secret", Ids(0, 1999))->own_list())
    padded.mutable_blind()->add_elements(guess);
  ScriptedCurator::Log log;
  const absl::Status status = RunAgainst({padded}, &log);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_THAT(status.message(), HasSubstr("refusing to blind the curator's list"));
  ASSERT_THAT(log.aligns, SizeIs(1));  // its own list only: nothing was blinded
  EXPECT_EQ(log.aligns[0].hop(), 0u);
  ASSERT_THAT(log.refusals, SizeIs(1));
  EXPECT_THAT(log.refusals[0], HasSubstr("refusing to blind the curator's list"));
}

TEST_F(VerticalPartyCoreTest, APartyEndsTheRunOnASecondBlindingTaskForAHop) {
  const PsiParty beta = *PsiParty::Create("beta-secret", Ids(0, 3));
  const PsiParty other_beta = *PsiParty::Create("other-beta-secret", Ids(0, 3));
  const v1::PartyConfig config = Config();
  ScriptedCurator::Log log;
  const absl::Status status = RunAgainst(
      {BlindingTaskOf(beta.own_list()), BlindingTaskOf(other_beta.own_list())}, &log, config);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr("refusing a second list to blind for alignment hop 1"));
  ASSERT_THAT(log.aligns, SizeIs(2));  // its own list and the first task's, blinded
  EXPECT_EQ(log.aligns[1].hop(), 1u);
  ASSERT_THAT(log.refusals, SizeIs(1));
  EXPECT_THAT(log.refusals[0], HasSubstr("refusing a second list"));
  EXPECT_THAT(log.refusals[0], Not(HasSubstr(config.checkpoint_dir())));  // a local path
}

// Alpha cannot record that it answers hop 1: its blinded list does not leave, and what
// it tells the curator names no local path.
TEST_F(VerticalPartyCoreTest, NothingLeavesWhenTheAnsweredHopCannotBeRecorded) {
  const v1::PartyConfig config = Config();
  // A directory where the hops file's temporary copy goes makes its write fail.
  ASSERT_TRUE(MakeDirectories(absl::StrCat(config.checkpoint_dir(), "/alignment.hops.tmp.",
                                           ::getpid()))
                  .ok());
  ScriptedCurator::Log log;
  const absl::Status status = RunAgainst(
      {BlindingTaskOf(PsiParty::Create("beta-secret", Ids(0, 3))->own_list())}, &log, config);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("cannot record alignment hop 1"));
  ASSERT_THAT(log.aligns, SizeIs(1));  // its own list only
  ASSERT_THAT(log.refusals, SizeIs(1));
  EXPECT_THAT(log.refusals[0], Not(HasSubstr(config.checkpoint_dir())));
}

}  // namespace
}  // namespace vfsynth
