// PartyCore without gRPC: secrets, registration and alignment answers, and every
// curator round message checked before the party acts on it.
#include "client/party_core.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/data/alignment.h"
#include "common/model/config.h"
#include "common/model/party_model.h"
#include "common/net/tensor_codec.h"
#include "common/util/file_io.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr char kRunId[] = "unit-run";
constexpr char kAlignmentKey[] = "unit-alignment-key-0123";
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

v1::PartyConfig Config(const std::string& secrets = "secrets.txt") {
  v1::PartyConfig config;
  config.set_name("alpha");
  config.set_curator("127.0.0.1:1");
  config.set_plaintext(true);
  config.set_data(Dir() + "/alpha.csv");
  config.set_schema(Dir() + "/alpha.schema.json");
  config.set_secrets(Dir() + "/" + secrets);
  config.set_max_message_bytes(kLimit);
  config.mutable_privacy()->set_mode("none");  // these tests exercise the protocol, not DP
  EXPECT_TRUE(ResolvePartyConfig("", &config).ok());
  return config;
}

v1::RegisterResponse Registration() {
  v1::RegisterResponse response;
  response.set_run_id(kRunId);
  response.set_protocol_version(1);
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

// The curator's answer: records r<first>..r<last>, sorted by token.
v1::AlignResponse Alignment(int first, int last) {
  std::vector<std::string> tokens;
  for (int i = first; i <= last; ++i) tokens.push_back(AlignmentToken(kAlignmentKey, absl::StrCat("r", i)));
  std::sort(tokens.begin(), tokens.end());
  v1::AlignResponse response;
  for (const std::string& token : tokens) response.add_tokens(token);
  return response;
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

v1::CuratorMessage CriticTask(int64_t round, int64_t step, std::vector<int64_t> shape = {kBatch, kWidth}) {
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
  *message.mutable_generator_feature_gradient()->mutable_grad() = Filled({kBatch, kFeatureDim}, 0.02f);
  return message;
}

class PartyCoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(MakeDirectories(Dir()).ok());
    std::string csv = "id,a,b\n";
    for (int i = 0; i < 10; ++i) absl::StrAppend(&csv, "r", i, ",", i % 3 ? "x" : "y", ",", i / 10.0, "\n");
    Write("alpha.csv", csv);
    Write("alpha.schema.json", R"({"id_column":"id","columns":[
        {"name":"a","type":"categorical","categories":["x","y"]},
        {"name":"b","type":"continuous","min":0,"max":1}]})");
    Write("secrets.txt", absl::StrCat("# shared by the parties only\n  sampling_secret=unit-sampling-secret-0123  \n",
                                      "\nalignment_key=", kAlignmentKey, "\n"));
  }

  std::unique_ptr<PartyCore> Registered() {
    auto core = PartyCore::Create(Config());
    EXPECT_TRUE(core.ok()) << core.status();
    if (!core.ok()) return nullptr;
    EXPECT_TRUE((*core)->AcceptRegistration(Registration()).ok());
    return std::move(*core);
  }

  // Registered and aligned on records r2..r9 (8 >= batch size).
  std::unique_ptr<PartyCore> Aligned() {
    std::unique_ptr<PartyCore> core = Registered();
    if (core == nullptr) return nullptr;
    const absl::Status status = core->AcceptAlignment(Alignment(2, 9));
    EXPECT_TRUE(status.ok()) << status;
    return core;
  }
};

// ---- secrets ----

TEST_F(PartyCoreTest, LoadPartySecretsReadsBothKeysIgnoringComments) {
  auto secrets = LoadPartySecrets(Dir() + "/secrets.txt");
  ASSERT_TRUE(secrets.ok()) << secrets.status();
  EXPECT_EQ(secrets->sampling_secret, "unit-sampling-secret-0123");
  EXPECT_EQ(secrets->alignment_key, kAlignmentKey);
}

TEST_F(PartyCoreTest, LoadPartySecretsRejectsShortMissingOrUnknownKeys) {
  const std::string short_key = Write("short.txt", "sampling_secret=unit-sampling-secret-0123\nalignment_key=short\n");
  auto secrets = LoadPartySecrets(short_key);
  EXPECT_EQ(secrets.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(secrets.status().message(), AllOf(HasSubstr("short.txt"), HasSubstr("at least 16")));

  const std::string missing = Write("missing.txt", "sampling_secret=unit-sampling-secret-0123\n");
  EXPECT_EQ(LoadPartySecrets(missing).status().code(), absl::StatusCode::kInvalidArgument);

  const std::string unknown = Write("unknown.txt", "sampling_secret=unit-sampling-secret-0123\n"
                                                   "alignment_key=unit-alignment-key-0123\nsalt=abcdefabcdefabcdef\n");
  secrets = LoadPartySecrets(unknown);
  EXPECT_EQ(secrets.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(secrets.status().message(), HasSubstr("unknown key 'salt'"));

  const std::string no_equals = Write("no_equals.txt", "sampling_secret unit-sampling-secret-0123\n"
                                                       "alignment_key=unit-alignment-key-0123\n");
  EXPECT_FALSE(LoadPartySecrets(no_equals).ok());
  EXPECT_FALSE(LoadPartySecrets(Dir() + "/does-not-exist.txt").ok());
  // Create refuses to start without usable secrets.
  EXPECT_FALSE(PartyCore::Create(Config("short.txt")).ok());
}

// ---- registration and alignment ----

TEST_F(PartyCoreTest, RegisterRequestCarriesThePublicSchemaOnly) {
  auto core = PartyCore::Create(Config());
  ASSERT_TRUE(core.ok()) << core.status();
  const v1::RegisterRequest request = (*core)->MakeRegisterRequest();
  EXPECT_EQ(request.party(), "alpha");
  EXPECT_EQ(request.protocol_version(), 1u);
  EXPECT_EQ(request.rows(), 10);
  EXPECT_EQ(request.schema().id_column(), "");  // the curator gets no id column
  EXPECT_THAT(request.schema().columns(), SizeIs(2));
}

TEST_F(PartyCoreTest, AcceptRegistrationChecksTheCuratorsAnswer) {
  auto core = PartyCore::Create(Config());
  ASSERT_TRUE(core.ok()) << core.status();
  v1::RegisterResponse response = Registration();
  response.set_protocol_version(2);
  EXPECT_EQ((*core)->AcceptRegistration(response).code(), absl::StatusCode::kFailedPrecondition);
  response = Registration();
  response.clear_run_id();
  EXPECT_EQ((*core)->AcceptRegistration(response).code(), absl::StatusCode::kInvalidArgument);
  response = Registration();
  response.mutable_training()->set_batch_size(0);
  const absl::Status status = (*core)->AcceptRegistration(response);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("batch_size"));
  ASSERT_TRUE((*core)->AcceptRegistration(Registration()).ok());

  const v1::AlignRequest align = (*core)->MakeAlignRequest();
  EXPECT_EQ(align.run_id(), kRunId);
  EXPECT_EQ(align.party(), "alpha");
  ASSERT_THAT(align.tokens(), SizeIs(10));
  EXPECT_EQ(align.tokens(0), AlignmentToken(kAlignmentKey, "r0"));
  for (const std::string& token : align.tokens()) EXPECT_THAT(token, SizeIs(64));
}

TEST_F(PartyCoreTest, AcceptAlignmentRejectsUnsortedDuplicateShortOrForeignTokens) {
  std::unique_ptr<PartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  v1::AlignResponse unsorted = Alignment(2, 9);
  std::swap(*unsorted.mutable_tokens(0), *unsorted.mutable_tokens(1));
  absl::Status status = core->AcceptAlignment(unsorted);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("sorted"));

  v1::AlignResponse duplicate = Alignment(2, 9);
  duplicate.set_tokens(1, duplicate.tokens(0));
  EXPECT_EQ(core->AcceptAlignment(duplicate).code(), absl::StatusCode::kInvalidArgument);

  status = core->AcceptAlignment(Alignment(0, 2));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("only 3"), HasSubstr("batch size 4")));

  v1::AlignResponse foreign = Alignment(2, 9);
  foreign.set_tokens(7, std::string(64, 'f'));  // sorts last, not held by this party
  EXPECT_FALSE(core->AcceptAlignment(foreign).ok());
  EXPECT_EQ(core->model(), nullptr);  // nothing was built from a refused answer

  ASSERT_TRUE(core->AcceptAlignment(Alignment(2, 9)).ok());
  ASSERT_NE(core->model(), nullptr);
  EXPECT_EQ(core->model()->rows(), 8);
  EXPECT_EQ(core->model()->width(), kWidth);
}

TEST_F(PartyCoreTest, AlignmentIsAcceptedOnlyOnce) {
  // A second answer would reorder already reordered rows (and the encoded buffer is
  // gone); it must be refused, not acted on.
  std::unique_ptr<PartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  PartyModel* model = core->model();
  const absl::Status again = core->AcceptAlignment(Alignment(2, 9));
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(core->model(), model);
}

// ---- round messages ----

TEST_F(PartyCoreTest, RoundMessageBeforeAlignmentIsFailedPrecondition) {
  std::unique_ptr<PartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->Handle(CriticTask(0, 0)).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PartyCoreTest, CriticTaskYieldsOneFeaturesReply) {
  std::unique_ptr<PartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  auto replies = core->Handle(CriticTask(0, 1));
  ASSERT_TRUE(replies.ok()) << replies.status();
  ASSERT_THAT(*replies, SizeIs(1));
  const v1::PartyMessage& reply = (*replies)[0];
  EXPECT_EQ(reply.run_id(), kRunId);
  EXPECT_EQ(reply.round(), 0);
  EXPECT_EQ(reply.step(), 1);
  ASSERT_TRUE(reply.has_features());
  EXPECT_TRUE(ValidateTensor(reply.features().h_real(), {kBatch, kFeatureDim}, "h_real", kLimit).ok());
  EXPECT_TRUE(ValidateTensor(reply.features().h_fake(), {kBatch, kFeatureDim}, "h_fake", kLimit).ok());

  // The matching gradients complete the step; nothing goes back.
  replies = core->Handle(FeatureGradients(0, 1));
  ASSERT_TRUE(replies.ok()) << replies.status();
  EXPECT_THAT(*replies, SizeIs(0));
}

TEST_F(PartyCoreTest, WronglyShapedCriticTaskIsInvalidArgument) {
  std::unique_ptr<PartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  auto replies = core->Handle(CriticTask(0, 0, {kBatch, kWidth + 1}));
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(replies.status().message(),
              AllOf(HasSubstr("critic_task.fake_slice"), HasSubstr("[4, 3]"), HasSubstr("[4, 4]")));

  v1::CuratorMessage nan = CriticTask(0, 0);
  const float value = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(nan.mutable_critic_task()->mutable_fake_slice()->mutable_data()->data() + 2 * sizeof(float),
              &value, sizeof(float));
  replies = core->Handle(nan);
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(replies.status().message(), AllOf(HasSubstr("critic_task.fake_slice"), HasSubstr("non-finite")));

  v1::CuratorMessage no_tensor = Envelope(0, 0);
  no_tensor.mutable_critic_task();
  EXPECT_EQ(core->Handle(no_tensor).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PartyCoreTest, OversizeTensorIsResourceExhausted) {
  std::unique_ptr<PartyCore> core = Registered();
  ASSERT_NE(core, nullptr);
  v1::RegisterResponse response = Registration();
  response.mutable_model()->set_feature_dim(70000);  // 4 x 70000 floats > 1 MiB limit
  ASSERT_TRUE(core->AcceptRegistration(response).ok());
  ASSERT_TRUE(core->AcceptAlignment(Alignment(2, 9)).ok());
  // Shaped as expected, so only the size is wrong.
  v1::CuratorMessage message = Envelope(0, 0);
  *message.mutable_feature_gradients()->mutable_grad_real() = Filled({kBatch, 70000}, 0.01f);
  *message.mutable_feature_gradients()->mutable_grad_fake() = Filled({kBatch, 70000}, 0.01f);
  auto replies = core->Handle(message);
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(replies.status().message(), HasSubstr("feature_gradients.grad_real"));
}

TEST_F(PartyCoreTest, WrongRunIdIsRefused) {
  std::unique_ptr<PartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  v1::CuratorMessage message = CriticTask(0, 0);
  message.set_run_id("other-run");
  auto replies = core->Handle(message);
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(replies.status().message(), HasSubstr("'other-run'"));
}

TEST_F(PartyCoreTest, CriticStepOutsideItsRoundIsRefused) {
  std::unique_ptr<PartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  for (const auto& [round, step] : {std::pair<int64_t, int64_t>{0, kNCritic}, {1, 1}, {0, -1}, {-1, -1}}) {
    auto replies = core->Handle(CriticTask(round, step));
    EXPECT_EQ(replies.status().code(), absl::StatusCode::kInvalidArgument) << round << "/" << step;
    EXPECT_THAT(replies.status().message(), HasSubstr("does not belong to round"));
  }
}

TEST_F(PartyCoreTest, FeatureGradientsForAStepNotPendingAreFailedPrecondition) {
  std::unique_ptr<PartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  // Nothing pending yet, including the "no step" value -1 used internally.
  for (const int64_t step : {int64_t{0}, int64_t{-1}}) {
    auto replies = core->Handle(FeatureGradients(0, step));
    EXPECT_EQ(replies.status().code(), absl::StatusCode::kFailedPrecondition) << step << ": " << replies.status();
  }
  ASSERT_TRUE(core->Handle(CriticTask(0, 0)).ok());
  auto replies = core->Handle(FeatureGradients(0, 1));
  EXPECT_EQ(replies.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(replies.status().message(), AllOf(HasSubstr("step 1"), HasSubstr("step 0 is pending")));
  ASSERT_TRUE(core->Handle(FeatureGradients(0, 0)).ok());
  // Used once: the same gradients again are not pending any more.
  EXPECT_EQ(core->Handle(FeatureGradients(0, 0)).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PartyCoreTest, GeneratorPhaseRepliesWithFeaturesThenSliceGradient) {
  std::unique_ptr<PartyCore> core = Aligned();
  ASSERT_NE(core, nullptr);
  // Gradient before any generator task (round -1 is the internal "none" value).
  for (const int64_t round : {int64_t{0}, int64_t{-1}}) {
    EXPECT_EQ(core->Handle(GeneratorFeatureGradient(round)).status().code(),
              absl::StatusCode::kFailedPrecondition)
        << round;
  }
  auto replies = core->Handle(GeneratorTask(2));
  ASSERT_TRUE(replies.ok()) << replies.status();
  ASSERT_THAT(*replies, SizeIs(1));
  EXPECT_EQ((*replies)[0].round(), 2);
  EXPECT_EQ((*replies)[0].step(), -1);
  EXPECT_THAT((*replies)[0].generator_features().h().shape(), ElementsAre(kBatch, kFeatureDim));

  EXPECT_EQ(core->Handle(GeneratorFeatureGradient(1)).status().code(), absl::StatusCode::kFailedPrecondition);
  replies = core->Handle(GeneratorFeatureGradient(2));
  ASSERT_TRUE(replies.ok()) << replies.status();
  ASSERT_THAT(*replies, SizeIs(1));
  EXPECT_TRUE(ValidateTensor((*replies)[0].slice_gradient().grad(), {kBatch, kWidth}, "grad", kLimit).ok());

  v1::CuratorMessage bad = GeneratorTask(3);
  *bad.mutable_generator_task()->mutable_fake_slice() = Filled({kBatch, 1}, 0);
  EXPECT_THAT(core->Handle(bad).status().message(), HasSubstr("generator_task.fake_slice"));
}

TEST_F(PartyCoreTest, CuratorErrorAbortsAndFinishedEnds) {
  std::unique_ptr<PartyCore> core = Aligned();
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
  finished.mutable_finished()->set_message("training finished");
  replies = core->Handle(finished);
  ASSERT_TRUE(replies.ok());
  EXPECT_THAT(*replies, SizeIs(0));
  EXPECT_TRUE(core->finished());
  EXPECT_EQ(core->finish_message(), "training finished");
}

}  // namespace
}  // namespace vfsynth
