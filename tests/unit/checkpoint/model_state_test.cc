// Saved model state restores bit-identically: parameters, buffers, optimiser moments
// and (dpsgd) the shared critic's noise stream, so training continues exactly as if
// it had never stopped.
#include "common/checkpoint/model_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config/config.h"
#include "common/data/encoder.h"
#include "common/gan/curator_model.h"
#include "common/gan/party_model.h"
#include "common/random/secure_random.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

constexpr char kSecret[] = "model-state-test-sampling-secret";
constexpr char kPartySecret[] = "model-state-test-party-secret";

TableEncoder MakeEncoder(const std::string& prefix, int categories) {
  v1::Schema schema;
  schema.set_id_column("id");
  v1::Column* cat = schema.add_columns();
  cat->set_name(prefix + "_cat");
  cat->set_type("categorical");
  for (int i = 0; i < categories; ++i) cat->add_categories("c" + std::to_string(i));
  v1::Column* num = schema.add_columns();
  num->set_name(prefix + "_num");
  num->set_type("continuous");
  num->set_min(0);
  num->set_max(1);
  auto encoder = TableEncoder::Create(schema);
  EXPECT_TRUE(encoder.ok()) << encoder.status();
  return std::move(*encoder);
}

struct Settings {
  v1::ModelConfig model;
  v1::TrainingConfig training;
};

Settings SmallSettings(int feature_dim = 8) {
  Settings s;
  s.model.add_generator_hidden(16);
  s.model.add_feature_hidden(16);
  s.model.add_shared_hidden(16);
  s.model.set_z_dim(8);
  s.model.set_feature_dim(feature_dim);
  s.training.set_batch_size(16);
  s.training.set_n_critic(2);
  EXPECT_TRUE(ResolveModelConfig(&s.model).ok());
  EXPECT_TRUE(ResolveTrainingConfig(&s.training).ok());
  return s;
}

void ExpectIdentical(torch::nn::Module& a, torch::nn::Module& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& item : pa) {
    EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();
  }
  const auto ba = a.named_buffers(), bb = b.named_buffers();
  ASSERT_EQ(ba.size(), bb.size());
  for (const auto& item : ba) EXPECT_TRUE(torch::equal(item.value(), bb[item.key()])) << item.key();
}

bool AnyDifferent(torch::nn::Module& a, torch::nn::Module& b) {
  const auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!torch::equal(pa[i], pb[i])) return true;
  }
  return false;
}

// One critic step and one generator step with stand-in party features.
void TrainCurator(CuratorModel& curator, int64_t round, int feature_dim, int batch) {
  torch::manual_seed(100 + round);  // the stand-in features only
  const int64_t step = round * 2;
  curator.CriticSlices(step);
  std::vector<torch::Tensor> hr, hf;
  for (int k = 0; k < curator.num_parties(); ++k) {
    hr.push_back(torch::randn({batch, feature_dim}));
    hf.push_back(torch::randn({batch, feature_dim}));
  }
  ASSERT_TRUE(curator.SharedCriticStep(step, hr, hf).ok());
  const auto slices = curator.GeneratorSlices(round);
  std::vector<torch::Tensor> grads;
  for (const auto& slice : slices) grads.push_back(torch::randn_like(slice) * 0.1);
  ASSERT_TRUE(curator.GeneratorStep(round, grads).ok());
}

// A curator over parties a and b; with `dpsgd`, D_s steps with DP-SGD on noise keyed
// by `noise_key`.
std::unique_ptr<CuratorModel> MakeCurator(const Settings& s, const TableEncoder& a,
                                          const TableEncoder& b, bool dpsgd,
                                          const std::string& noise_key) {
  auto model =
      std::make_unique<CuratorModel>(s.model, s.training, std::vector<const TableEncoder*>{&a, &b});
  if (dpsgd) model->SetSharedCriticPrivacy(0.7, 1.0, noise_key);
  return model;
}

class CuratorStateTest : public ::testing::TestWithParam<bool> {};

TEST_P(CuratorStateTest, RestoreIsBitIdenticalAndTrainingContinuesIdentically) {
  const bool dpsgd = GetParam();
  Settings s = SmallSettings();
  // The DP variant also keeps a generator weight average (both layouts are covered).
  if (dpsgd) s.training.mutable_experimental()->set_generator_average_decay(0.8);
  const TableEncoder a = MakeEncoder("a", 3), b = MakeEncoder("b", 5);
  auto trained = MakeCurator(s, a, b, dpsgd, "42");
  for (int round = 0; round < 3; ++round) TrainCurator(*trained, round, 8, 16);
  auto saved = SaveCuratorState(*trained);
  ASSERT_TRUE(saved.ok()) << saved.status();

  auto restored = MakeCurator(s, a, b, dpsgd, "42");  // fresh weights; the run's noise key
  ASSERT_TRUE(AnyDifferent(*trained->generator(), *restored->generator()));
  ASSERT_TRUE(RestoreCuratorState(*saved, *restored).ok());
  ExpectIdentical(*trained->generator(), *restored->generator());
  ExpectIdentical(*trained->shared_critic(), *restored->shared_critic());
  ExpectIdentical(*trained->published_generator(), *restored->published_generator());
  if (dpsgd) {
    EXPECT_EQ(restored->generator_average()->updates(), 3);
  }

  // Adam moments and step counts came back too, and D_s's noise is a function of its
  // key and the step: the next rounds move both models identically.
  for (int round = 3; round < 5; ++round) {
    TrainCurator(*trained, round, 8, 16);
    TrainCurator(*restored, round, 8, 16);
  }
  ExpectIdentical(*trained->generator(), *restored->generator());
  ExpectIdentical(*trained->shared_critic(), *restored->shared_critic());
  ExpectIdentical(*trained->published_generator(), *restored->published_generator());
}

INSTANTIATE_TEST_SUITE_P(PlainAndDpsgd, CuratorStateTest, ::testing::Bool());

// The curator's round-end snapshot: a copy that the live model's later steps do not
// move, and that holds everything the next round depends on (Adam's moments and step
// counts, the generator average; D_s's noise depends only on its key and the step).
class CuratorStateCopyTest : public ::testing::TestWithParam<bool> {};

TEST_P(CuratorStateCopyTest, CopyHoldsTheRoundsStateWhileTheLiveModelTrainsOn) {
  const bool dpsgd = GetParam();
  Settings s = SmallSettings();
  if (dpsgd) s.training.mutable_experimental()->set_generator_average_decay(0.8);
  const TableEncoder a = MakeEncoder("a", 3), b = MakeEncoder("b", 5);
  auto live = MakeCurator(s, a, b, dpsgd, "42");
  auto copy = MakeCurator(s, a, b, dpsgd, "42");
  for (int round = 0; round < 3; ++round) TrainCurator(*live, round, 8, 16);
  ASSERT_TRUE(AnyDifferent(*live->generator(), *copy->generator()));
  ASSERT_TRUE(CopyCuratorState(*live, *copy).ok());
  ExpectIdentical(*live->generator(), *copy->generator());

  // The live model trains on; the copy, serialized afterwards (as the checkpoint job
  // does), still holds round 3's start: restored and trained one round, it lands where
  // the live model did.
  TrainCurator(*live, 3, 8, 16);
  ASSERT_TRUE(AnyDifferent(*live->generator(), *copy->generator()));
  const auto saved = SaveCuratorState(*copy);
  ASSERT_TRUE(saved.ok()) << saved.status();
  auto restored = MakeCurator(s, a, b, dpsgd, "42");
  ASSERT_TRUE(RestoreCuratorState(*saved, *restored).ok());
  TrainCurator(*restored, 3, 8, 16);
  ExpectIdentical(*live->generator(), *restored->generator());
  ExpectIdentical(*live->shared_critic(), *restored->shared_critic());
  ExpectIdentical(*live->published_generator(), *restored->published_generator());
  // So does the copy itself.
  TrainCurator(*copy, 3, 8, 16);
  ExpectIdentical(*live->generator(), *copy->generator());
  ExpectIdentical(*live->shared_critic(), *copy->shared_critic());
  ExpectIdentical(*live->published_generator(), *copy->published_generator());
}

INSTANTIATE_TEST_SUITE_P(PlainAndDpsgd, CuratorStateCopyTest, ::testing::Bool());

TEST(CuratorStateCopyTest, RefusesAModelOfAnotherArchitecture) {
  const TableEncoder a = MakeEncoder("a", 3), b = MakeEncoder("b", 5);
  const Settings s = SmallSettings(8), wide = SmallSettings(12);
  CuratorModel small(s.model, s.training, {&a, &b});
  CuratorModel other(wide.model, wide.training, {&a, &b});
  const absl::Status status = CopyCuratorState(small, other);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("another architecture"));
}

TEST(CuratorStateTest, RefusesStateOfAnotherArchitecture) {
  const TableEncoder a = MakeEncoder("a", 3), b = MakeEncoder("b", 5);
  const Settings s = SmallSettings(8);
  CuratorModel small(s.model, s.training, {&a, &b});
  auto saved = SaveCuratorState(small);
  ASSERT_TRUE(saved.ok());
  const Settings wide = SmallSettings(12);
  CuratorModel other(wide.model, wide.training, {&a, &b});
  const absl::Status status = RestoreCuratorState(*saved, other);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("another architecture"));
  EXPECT_FALSE(RestoreCuratorState("not an archive", other).ok());
}

// D_s's input width is pack * K * d_h: a resume under another model.experimental.pack is refused
// (the checkpoint header's settings digest refuses it before this, see config_test).
TEST(CuratorStateTest, RefusesStateOfAnotherPack) {
  const TableEncoder a = MakeEncoder("a", 3), b = MakeEncoder("b", 5);
  Settings s = SmallSettings(8);
  CuratorModel unpacked(s.model, s.training, {&a, &b});
  auto saved = SaveCuratorState(unpacked);
  ASSERT_TRUE(saved.ok());
  s.model.mutable_experimental()->set_pack(2);
  CuratorModel packed(s.model, s.training, {&a, &b});
  const absl::Status status = RestoreCuratorState(*saved, packed);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("shared_critic has another architecture"));
  // A packed state restores into a packed model (the refused one is unusable now).
  CuratorModel trained(s.model, s.training, {&a, &b});
  TrainCurator(trained, 0, 8, 16);
  auto saved_packed = SaveCuratorState(trained);
  ASSERT_TRUE(saved_packed.ok());
  CuratorModel restored(s.model, s.training, {&a, &b});
  const absl::Status restored_status = RestoreCuratorState(*saved_packed, restored);
  ASSERT_TRUE(restored_status.ok()) << restored_status;
  ExpectIdentical(*trained.shared_critic(), *restored.shared_critic());
}

// Packed D_s with DP-SGD is refused by config validation; the model refuses it too
// rather than feeding per-row examples to a packed critic.
TEST(CuratorStateTest, PackedSharedCriticRefusesDpsgd) {
  const TableEncoder a = MakeEncoder("a", 3);
  Settings s = SmallSettings(8);
  s.model.mutable_experimental()->set_pack(2);
  CuratorModel model(s.model, s.training, {&a});
  model.SetSharedCriticPrivacy(1.0, 1.0, "k");
  const auto result = model.SharedCriticStep(0, {torch::randn({16, 8})}, {torch::randn({16, 8})});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(), HasSubstr("model.experimental.pack 2"));
}

// D_s's step in its two halves: the update needs that step's feature gradients, each
// set of them serves one update, and the halves step D_s as SharedCriticStep does.
TEST(CuratorStateTest, SharedCriticUpdatesOncePerFeatureGradients) {
  const TableEncoder a = MakeEncoder("a", 3);
  const Settings s = SmallSettings(8);
  CuratorModel whole(s.model, s.training, {&a});
  CuratorModel halves(s.model, s.training, {&a});
  EXPECT_EQ(halves.StepSharedCritic().status().code(), absl::StatusCode::kFailedPrecondition);
  const torch::Tensor hr = torch::randn({16, 8});
  const torch::Tensor hf = torch::randn({16, 8});
  const auto step = whole.SharedCriticStep(0, {hr}, {hf});
  ASSERT_TRUE(step.ok()) << step.status();
  const auto gradients = halves.SharedFeatureGradients(0, {hr}, {hf});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  const auto loss = halves.StepSharedCritic();
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_EQ(*loss, step->loss);
  EXPECT_TRUE(torch::equal(gradients->real[0], step->gradients.real[0]));
  EXPECT_TRUE(torch::equal(gradients->fake[0], step->gradients.fake[0]));
  ExpectIdentical(*whole.shared_critic(), *halves.shared_critic());
  EXPECT_EQ(halves.StepSharedCritic().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CuratorStateTest, RefusesGeneratorAverageMismatch) {
  const TableEncoder a = MakeEncoder("a", 3);
  Settings s = SmallSettings();
  s.training.mutable_experimental()->set_generator_average_decay(
      0);  // the last iterate (the default averages)
  CuratorModel last_iterate(s.model, s.training, {&a});
  auto saved = SaveCuratorState(last_iterate);
  ASSERT_TRUE(saved.ok());
  s.training.mutable_experimental()->set_generator_average_decay(0.9);
  CuratorModel averaged(s.model, s.training, {&a});
  EXPECT_THAT(RestoreCuratorState(*saved, averaged).message(),
              HasSubstr("generator_average_decay"));
  auto saved_averaged = SaveCuratorState(averaged);
  ASSERT_TRUE(saved_averaged.ok());
  EXPECT_FALSE(RestoreCuratorState(*saved_averaged, last_iterate).ok());
}

// Whoever reads a checkpoint must not learn D_s's noise: models that differ only in
// their noise key (or have none) save the same records.
TEST(CuratorStateTest, SavedStateHoldsNoNoiseStream) {
  const TableEncoder a = MakeEncoder("a", 3);
  const Settings s = SmallSettings();
  CuratorModel plain(s.model, s.training, {&a});
  CuratorModel one(s.model, s.training, {&a});
  CuratorModel other(s.model, s.training, {&a});
  one.SetSharedCriticPrivacy(1.0, 1.0, "one");
  other.SetSharedCriticPrivacy(1.0, 1.0, "other");
  auto saved_plain = SaveCuratorState(plain);
  auto saved_one = SaveCuratorState(one);
  auto saved_other = SaveCuratorState(other);
  ASSERT_TRUE(saved_plain.ok() && saved_one.ok() && saved_other.ok());
  auto keys = [](const std::string& bytes) {
    torch::serialize::InputArchive archive;
    archive.load_from(bytes.data(), bytes.size());
    return archive.keys();
  };
  EXPECT_EQ(keys(*saved_one), keys(*saved_plain));
  EXPECT_EQ(keys(*saved_other), keys(*saved_plain));
  // And each restores into a model of the other kind.
  EXPECT_TRUE(RestoreCuratorState(*saved_one, plain).ok());
  EXPECT_TRUE(RestoreCuratorState(*saved_plain, other).ok());
}

// How a party uses the wait for the curator between the halves of a step.
enum class Ahead { kNothing, kPrepare, kPrepareThenReplayFeatures };

void TrainParty(PartyModel& party, int64_t step, int feature_dim, int batch,
                Ahead ahead = Ahead::kNothing, double* loss = nullptr) {
  torch::manual_seed(200 + step);  // stand-in curator messages only
  const torch::Tensor slice = torch::rand({batch, party.width()});
  ASSERT_TRUE(party.CriticFeatures(step, slice).ok());
  if (ahead != Ahead::kNothing) party.PrepareAhead();
  if (ahead == Ahead::kPrepareThenReplayFeatures) {  // a resent task rebuilds the pending step
    ASSERT_TRUE(party.CriticFeatures(step, slice).ok());
    party.PrepareAhead();
  }
  auto result = party.CriticUpdate(step, torch::randn({batch, feature_dim}) * 0.01,
                                   torch::randn({batch, feature_dim}) * 0.01);
  ASSERT_TRUE(result.ok()) << result.status();
  if (loss != nullptr) *loss = *result;
}

// Party "p"'s encoded rows: 64 random rows of a 4-column encoder, drawn from `seed`.
torch::Tensor PartyTable(uint64_t seed) {
  const TableEncoder encoder = MakeEncoder("p", 4);
  torch::manual_seed(seed);
  return torch::rand({64, encoder.width()});
}

TEST(PartyStateTest, RestoreIsBitIdenticalAndTrainingContinuesIdentically) {
  const Settings s = SmallSettings();
  const torch::Tensor table = PartyTable(5);
  PartyModel trained("p", s.model, s.training, kSecret, kPartySecret, table.clone());
  for (int64_t step = 0; step < 4; ++step) TrainParty(trained, step, 8, 16);
  auto saved = SavePartyState(trained);
  ASSERT_TRUE(saved.ok()) << saved.status();
  PartyModel restored("p", s.model, s.training, kSecret, kPartySecret, table.clone());
  ASSERT_TRUE(AnyDifferent(*trained.feat(), *restored.feat()));
  ASSERT_TRUE(RestorePartyState(*saved, restored).ok());
  ExpectIdentical(*trained.feat(), *restored.feat());
  ExpectIdentical(*trained.head(), *restored.head());
  for (int64_t step = 4; step < 6; ++step) {
    TrainParty(trained, step, 8, 16);
    TrainParty(restored, step, 8, 16);
  }
  ExpectIdentical(*trained.feat(), *restored.feat());
  ExpectIdentical(*trained.head(), *restored.head());
}

// PrepareAhead (the local loss and the next batch, computed while the curator works)
// is pure state: with or without it, and after a replay rebuilds the pending step, the
// updates are bit-identical.
TEST(PartyStateTest, PreparingAheadChangesNoResult) {
  const Settings s = SmallSettings();
  const torch::Tensor table = PartyTable(6);
  PartyModel plain("p", s.model, s.training, kSecret, kPartySecret, table.clone());
  PartyModel prepared("p", s.model, s.training, kSecret, kPartySecret, table.clone());
  for (int64_t step = 0; step < 4; ++step) {
    double plain_loss = 0, prepared_loss = 0;
    TrainParty(plain, step, 8, 16, Ahead::kNothing, &plain_loss);
    TrainParty(prepared, step, 8, 16,
               step == 2 ? Ahead::kPrepareThenReplayFeatures : Ahead::kPrepare, &prepared_loss);
    EXPECT_EQ(plain_loss, prepared_loss) << "step " << step;
  }
  ExpectIdentical(*plain.feat(), *prepared.feat());
  ExpectIdentical(*plain.head(), *prepared.head());
}

// A noised marginal release is drawn once: a restored party uses the saved draw, not
// the one it drew on start-up (which never left it).
TEST(PartyStateTest, RestoresTheReleasedMarginalsInsteadOfANewDraw) {
  const Settings s = SmallSettings();
  const TableEncoder encoder = MakeEncoder("p", 4);
  const torch::Tensor table = PartyTable(7);
  auto draw = [&](uint64_t seed) {
    SecureRandom noise = SecureRandom::Derived("marginals", "noise", seed);
    auto target =
        MarginalTarget::FromTable(table, encoder.blocks(), MarginalOptions{4}, 50.0, &noise);
    EXPECT_TRUE(target.ok()) << target.status();
    return *std::move(target);
  };
  PartyModel released("p", s.model, s.training, kSecret, kPartySecret, table.clone());
  released.SetMarginalTarget(draw(1));
  auto saved = SavePartyState(released);
  ASSERT_TRUE(saved.ok()) << saved.status();
  PartyModel resumed("p", s.model, s.training, kSecret, kPartySecret, table.clone());
  resumed.SetMarginalTarget(draw(2));
  ASSERT_FALSE(torch::equal(resumed.marginal_target()->probabilities(),
                            released.marginal_target()->probabilities()));
  ASSERT_TRUE(RestorePartyState(*saved, resumed).ok());
  EXPECT_TRUE(torch::equal(resumed.marginal_target()->probabilities(),
                           released.marginal_target()->probabilities()));
  // A state with marginals and a run without them (or the reverse) disagree.
  PartyModel without("p", s.model, s.training, kSecret, kPartySecret, table.clone());
  EXPECT_THAT(RestorePartyState(*saved, without).message(), HasSubstr("marginal_weight"));
  auto plain = SavePartyState(without);
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(RestorePartyState(*plain, resumed).message(), HasSubstr("marginal_weight"));
}

TEST(PartyStateTest, RefusesStateOfAnotherParty) {
  const Settings s = SmallSettings();
  const TableEncoder narrow = MakeEncoder("p", 2), wide = MakeEncoder("q", 6);
  PartyModel p("p", s.model, s.training, kSecret, kPartySecret, torch::rand({32, narrow.width()}));
  PartyModel q("q", s.model, s.training, kSecret, kPartySecret, torch::rand({32, wide.width()}));
  auto saved = SavePartyState(p);
  ASSERT_TRUE(saved.ok());
  EXPECT_THAT(RestorePartyState(*saved, q).message(), HasSubstr("another architecture"));
}

}  // namespace
}  // namespace vfsynth
