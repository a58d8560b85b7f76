#include "common/nn/networks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "common/config/config.h"
#include "common/data/schema.h"
#include "common/gan/model_factory.h"
#include "common/nn/generator_average.h"

namespace vfsynth {
namespace {

v1::ModelConfig SmallModel(const std::string& output) {
  v1::ModelConfig m;
  m.set_z_dim(8);
  m.add_generator_hidden(16);
  m.add_feature_hidden(8);
  m.set_feature_dim(4);
  m.add_shared_hidden(8);
  v1::ExperimentalModelConfig::CategoricalOutput categorical;
  EXPECT_TRUE(v1::ExperimentalModelConfig::CategoricalOutput_Parse(output, &categorical)) << output;
  m.mutable_experimental()->set_categorical_output(categorical);
  m.mutable_experimental()->set_gumbel_tau(0.2);
  m.mutable_experimental()->set_leaky_slope(0.2);
  m.mutable_experimental()->set_generator_norm(v1::ExperimentalModelConfig::batch);
  return m;
}

TableEncoder MixedEncoder() {
  auto schema = ParseSchema(R"({"columns":[
      {"name":"c","type":"categorical","categories":["a","b","c"],"nullable":true},
      {"name":"x","type":"continuous","min":-1,"max":3},
      {"name":"n","type":"integer","min":0,"max":10,"nullable":true},
      {"name":"s","type":"continuous","min":0,"max":1,"bins":[0,0.5,1]}]})",
                            "s.json");
  EXPECT_TRUE(schema.ok()) << schema.status();
  auto encoder = TableEncoder::Create(*schema);
  EXPECT_TRUE(encoder.ok());
  return *encoder;
}

class GeneratorHeadsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GeneratorHeadsTest, TrainingOutputHasValidBlocks) {
  const TableEncoder encoder = MixedEncoder();
  Generator g(SmallModel(GetParam()), encoder.blocks(), encoder.width());
  const torch::Tensor out = g->forward(torch::randn({64, 8}), StreamGenerator("k", "g", 0));
  ASSERT_EQ(out.size(1), encoder.width());
  for (const OutputBlock& block : encoder.blocks()) {
    const torch::Tensor part = out.narrow(1, block.offset, block.width);
    if (block.kind == BlockKind::kSoftmax) {
      EXPECT_TRUE(torch::allclose(part.sum(1), torch::ones({64}), 1e-5, 1e-5));
      EXPECT_GE(part.min().item<float>(), 0.0f);
    } else {
      EXPECT_LE(part.abs().max().item<float>(), 1.0f);
    }
  }
}

TEST_P(GeneratorHeadsTest, SamplesDecodeToValidOneHotRows) {
  const TableEncoder encoder = MixedEncoder();
  Generator g(SmallModel(GetParam()), encoder.blocks(), encoder.width());
  g->eval();
  const torch::Tensor out = g->SampleHard(torch::randn({200, 8}), StreamGenerator("k", "s", 0));
  for (const OutputBlock& block : encoder.blocks()) {
    if (block.kind != BlockKind::kSoftmax) continue;
    const torch::Tensor part = out.narrow(1, block.offset, block.width);
    EXPECT_TRUE(torch::equal(part.sum(1), torch::ones({200})));  // exactly one
    EXPECT_TRUE(torch::equal((part == 0) | (part == 1), torch::ones_like(part, torch::kBool)));
  }
  const torch::Tensor contiguous = out.contiguous();
  const CsvTable decoded = encoder.Decode(contiguous.data_ptr<float>(), 200);
  for (const auto& row : decoded.rows) {
    EXPECT_TRUE(row[0] == "a" || row[0] == "b" || row[0] == "c" || row[0] == "?") << row[0];
    if (row[2] != "?") {
      const int n = std::stoi(row[2]);
      EXPECT_TRUE(n >= 0 && n <= 10) << n;
    }
    EXPECT_TRUE(row[3] == "0.25" || row[3] == "0.75") << row[3];
  }
}

// A temperature near 0 makes its block's category the logits' argmax, whatever the
// Gumbel draw; the other blocks keep their draws.
TEST(NetworksTest, SampleTemperatureSharpensOnlyItsBlock) {
  const TableEncoder encoder = MixedEncoder();
  Generator g(SmallModel("gumbel"), encoder.blocks(), encoder.width());
  g->eval();
  const torch::Tensor z = torch::randn({500, 8});
  const int label = encoder.blocks()[0].offset;  // column "c"
  const std::map<int, double> cold = {{label, 1e-4}};
  const torch::Tensor plain_1 = g->SampleHard(z, StreamGenerator("k", "s", 1));
  const torch::Tensor plain_2 = g->SampleHard(z, StreamGenerator("k", "s", 2));
  const torch::Tensor cold_1 = g->SampleHard(z, StreamGenerator("k", "s", 1), cold);
  const torch::Tensor cold_2 = g->SampleHard(z, StreamGenerator("k", "s", 2), cold);
  const int width = encoder.blocks()[0].width;
  EXPECT_FALSE(torch::equal(plain_1.narrow(1, label, width), plain_2.narrow(1, label, width)));
  // Rows whose two largest logits are closer than Gumbel noise times the temperature can
  // still flip; the others (nearly all of them) must be the argmax under either draw.
  const torch::Tensor logits = g->Logits(z).narrow(1, label, width);
  const torch::Tensor top2 = std::get<0>(logits.topk(2, 1));
  const torch::Tensor clear = (top2.select(1, 0) - top2.select(1, 1)) > 1e-2;
  EXPECT_GT(clear.sum().item<int64_t>(), 450);
  const torch::Tensor argmax = logits.argmax(1);
  for (const torch::Tensor& cold : {cold_1, cold_2}) {
    EXPECT_TRUE(torch::equal(cold.narrow(1, label, width).argmax(1).masked_select(clear),
                             argmax.masked_select(clear)));
  }
  const int rest = label + width;
  EXPECT_TRUE(torch::equal(cold_1.narrow(1, rest, encoder.width() - rest),
                           plain_1.narrow(1, rest, encoder.width() - rest)));
  EXPECT_TRUE(
      torch::equal(g->SampleHard(z, StreamGenerator("k", "s", 1), {{label, 1.0}}), plain_1));
}

// The label's block is found across parties' encoders at its joint offset.
TEST(NetworksTest, PublicationTemperaturesFindTheLabelBlockInTheJointLayout) {
  auto schema =
      ParseSchema(R"({"columns":[{"name":"y","type":"continuous","min":0,"max":1}]})", "y.json");
  ASSERT_TRUE(schema.ok()) << schema.status();
  auto first = TableEncoder::Create(*schema);
  ASSERT_TRUE(first.ok());
  const TableEncoder second = MixedEncoder();
  v1::OutputConfig output;
  output.set_label_column("c");
  output.set_label_temperature(0.5);
  auto found = PublicationTemperatures(output, {&*first, &second});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, (std::map<int, double>{{first->width() + second.blocks()[0].offset, 0.5}}));
  const TableEncoder& first_holder = second;
  output.set_label_temperature(1);
  EXPECT_TRUE(PublicationTemperatures(output, {&first_holder})->empty());
  output.set_label_column("x");  // continuous
  EXPECT_EQ(PublicationTemperatures(output, {&first_holder}).status().code(),
            absl::StatusCode::kInvalidArgument);
  output.set_label_column("missing");
  EXPECT_THAT(std::string(PublicationTemperatures(output, {&*first, &second}).status().message()),
              ::testing::HasSubstr("'missing' is in no party's schema"));
}

// model.experimental.conditioned_column: the label's head also reads the rest of the row.
class ConditionedHeadTest : public ::testing::Test {
 protected:
  // The column "c" (block 0) conditioned; "s" (the last block: bins [0, 0.5) and [0.5, 1])
  // is what it is made to follow below.
  Generator Make(const std::string& conditioned) {
    v1::ModelConfig model = SmallModel("gumbel");
    model.mutable_experimental()->set_conditioned_column(conditioned);
    v1::TrainingConfig training;
    training.set_seed(3);
    return MakeGenerator(model, training, {&encoder_});
  }
  const TableEncoder encoder_ = MixedEncoder();
  const OutputBlock label_ = encoder_.blocks().front();
  const OutputBlock bins_ = encoder_.blocks().back();
};

TEST_F(ConditionedHeadTest, StartsAsTheUnconditionedGenerator) {
  Generator plain = Make(""), conditioned = Make("c");
  EXPECT_EQ(conditioned->parameters().size(),
            plain->parameters().size() + 2);  // the map's weight and bias
  const torch::Tensor z = torch::randn({64, 8});
  EXPECT_TRUE(torch::allclose(conditioned->forward(z, StreamGenerator("k", "g", 0)),
                              plain->forward(z, StreamGenerator("k", "g", 0))));
  plain->eval();
  conditioned->eval();
  EXPECT_TRUE(torch::equal(conditioned->SampleHard(z, StreamGenerator("k", "s", 0)),
                           plain->SampleHard(z, StreamGenerator("k", "s", 0))));
}

TEST_F(ConditionedHeadTest, LabelFollowsTheRestOfTheRow) {
  Generator g = Make("c");
  ASSERT_EQ(bins_.kind, BlockKind::kSoftmax);
  ASSERT_EQ(bins_.width, 2);
  {
    // "s" in its first bin makes "c" = "a", in its second "c" = "b" (a logit shift of 100).
    torch::NoGradGuard no_grad;
    torch::Tensor weight = g->named_parameters()["condition.weight"];
    weight[0][bins_.offset] = 100.0;
    weight[1][bins_.offset + 1] = 100.0;
  }
  g->eval();
  const torch::Tensor rows = g->SampleHard(torch::randn({400, 8}), StreamGenerator("k", "s", 1));
  const torch::Tensor bin = rows.narrow(1, bins_.offset, 2).argmax(1);
  const torch::Tensor label = rows.narrow(1, label_.offset, label_.width).argmax(1);
  EXPECT_TRUE(torch::equal(label, bin));
  EXPECT_GT(bin.sum().item<int64_t>(), 0);  // both bins occur
  EXPECT_LT(bin.sum().item<int64_t>(), 400);
  EXPECT_TRUE(torch::equal(rows.narrow(1, label_.offset, label_.width).sum(1), torch::ones({400})));

  // Training output: the relaxed label follows the relaxed bins, and the map learns.
  g->train();
  const torch::Tensor out = g->forward(torch::randn({400, 8}), StreamGenerator("k", "g", 1));
  const torch::Tensor sure = std::get<0>(out.narrow(1, bins_.offset, 2).max(1)) > 0.99;
  ASSERT_GT(sure.sum().item<int64_t>(), 100);
  EXPECT_TRUE(torch::equal(out.narrow(1, label_.offset, label_.width).argmax(1).masked_select(sure),
                           out.narrow(1, bins_.offset, 2).argmax(1).masked_select(sure)));
  out.narrow(1, label_.offset, 1).sum().backward();
  EXPECT_GT(g->named_parameters()["condition.weight"].grad().abs().sum().item<double>(), 0.0);
}

TEST_F(ConditionedHeadTest, ColumnMustBeAPartysCategorical) {
  v1::ModelConfig model = SmallModel("gumbel");
  v1::TrainingConfig training;
  EXPECT_TRUE(CheckConditionedColumn(model, {&encoder_}).ok());  // none
  training.set_label_column("c");
  ResolveConditionedColumn(training, &model);  // unset: training.label_column
  EXPECT_EQ(model.experimental().conditioned_column(), "c");
  EXPECT_TRUE(CheckConditionedColumn(model, {&encoder_}).ok());
  model.mutable_experimental()->set_conditioned_column("x");  // continuous
  EXPECT_EQ(CheckConditionedColumn(model, {&encoder_}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THROW(MakeGenerator(model, training, {&encoder_}), c10::Error);
  model.mutable_experimental()->set_conditioned_column("missing");
  EXPECT_THAT(std::string(CheckConditionedColumn(model, {&encoder_}).message()),
              ::testing::HasSubstr(
                  "model.experimental.conditioned_column 'missing' is in no party's schema"));
}

INSTANTIATE_TEST_SUITE_P(Outputs, GeneratorHeadsTest, ::testing::Values("gumbel", "softmax"));

// model.experimental.generator_towers "per_party": each party's columns come from its own tower,
// so a party's slice depends on its tower's parameters only.
TEST(NetworksTest, PerPartyTowersFeedOnlyTheirOwnColumns) {
  // 10 columns: party 0 holds the 4-wide one-hot block, party 1 the rest.
  const TableEncoder encoder = MixedEncoder();
  v1::ModelConfig m = SmallModel("softmax");
  m.mutable_experimental()->set_generator_towers(v1::ExperimentalModelConfig::per_party);
  m.mutable_experimental()->set_generator_norm(v1::ExperimentalModelConfig::none);
  Generator g(m, encoder.blocks(), encoder.width(), std::vector<int>{4, 6});
  v1::ModelConfig joint_config = m;
  joint_config.mutable_experimental()->set_generator_towers(v1::ExperimentalModelConfig::joint);
  Generator joint(joint_config, encoder.blocks(), encoder.width());
  EXPECT_EQ(g->parameters().size(), 2 * joint->parameters().size());
  const torch::Tensor out = g->forward(torch::randn({16, 8}), StreamGenerator("k", "g", 0));
  ASSERT_EQ(out.size(1), encoder.width());
  const std::vector<torch::Tensor> grads = torch::autograd::grad(
      {(out.narrow(1, 0, 4) * torch::arange(4)).sum()}, g->parameters(), {}, true, false, true);
  const auto named = g->named_parameters();
  for (size_t i = 0; i < named.size(); ++i) {
    const bool own = named[i].key().rfind("body0", 0) == 0 || named[i].key().rfind("out0", 0) == 0;
    const bool touched = grads[i].defined() && grads[i].abs().sum().item<double>() > 0;
    EXPECT_EQ(touched, own) << named[i].key();
  }
  EXPECT_THROW(Generator(m, encoder.blocks(), encoder.width(), std::vector<int>{4, 5}), c10::Error);
}

// model.experimental.generator_private_z: tower k reads the shared z and its own private block, so
// a change in another tower's block leaves k's columns exactly as they were.
TEST(NetworksTest, PrivateLatentReachesOnlyItsOwnTower) {
  const TableEncoder encoder = MixedEncoder();
  v1::ModelConfig m = SmallModel("softmax");
  m.mutable_experimental()->set_generator_towers(v1::ExperimentalModelConfig::per_party);
  m.mutable_experimental()->set_generator_norm(v1::ExperimentalModelConfig::none);
  m.mutable_experimental()->set_generator_private_z(3);
  Generator g(m, encoder.blocks(), encoder.width(), std::vector<int>{4, 6});
  ASSERT_EQ(g->latent_width(), 8 + 2 * 3);
  const torch::Tensor z = torch::randn({16, g->latent_width()});
  const torch::Tensor out = g->forward(z, StreamGenerator("k", "g", 0));
  auto shifted = [&](int64_t offset, int64_t width) {
    torch::Tensor other = z.clone();
    other.narrow(1, offset, width).add_(1.0);
    return g->forward(other, StreamGenerator("k", "g", 0));
  };
  const torch::Tensor own0 = shifted(8, 3), own1 = shifted(11, 3), shared = shifted(0, 8);
  EXPECT_FALSE(torch::allclose(own0.narrow(1, 0, 4), out.narrow(1, 0, 4)));
  EXPECT_TRUE(torch::equal(own0.narrow(1, 4, 6), out.narrow(1, 4, 6)));
  EXPECT_TRUE(torch::equal(own1.narrow(1, 0, 4), out.narrow(1, 0, 4)));
  EXPECT_FALSE(torch::allclose(own1.narrow(1, 4, 6), out.narrow(1, 4, 6)));
  EXPECT_FALSE(torch::allclose(shared.narrow(1, 0, 4), out.narrow(1, 0, 4)));
  EXPECT_FALSE(torch::allclose(shared.narrow(1, 4, 6), out.narrow(1, 4, 6)));

  m.mutable_experimental()->set_generator_private_z(0);
  EXPECT_EQ(Generator(m, encoder.blocks(), encoder.width(), std::vector<int>{4, 6})->latent_width(),
            8);
}

TEST(NetworksTest, SeededModulesAreIdenticalAcrossBuilds) {
  const v1::ModelConfig m = SmallModel("gumbel");
  FeatureNet a = SeededModule<FeatureNet>("key", "feat", 5, m);
  torch::randn({100});  // unrelated draws in between must not matter
  FeatureNet b = SeededModule<FeatureNet>("key", "feat", 5, m);
  FeatureNet c = SeededModule<FeatureNet>("key", "other", 5, m);
  const auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i]));
  EXPECT_FALSE(torch::equal(pa[0], pc[0]));
}

TEST(NetworksTest, SharedCriticTakesPackedFeatures) {
  for (int pack : {1, 2, 4}) {
    v1::ModelConfig m = SmallModel("gumbel");
    m.mutable_experimental()->set_pack(pack);
    ASSERT_TRUE(ResolveModelConfig(&m).ok());
    ScoreNet critic = MakeSharedCritic(m, /*seed=*/1, /*num_parties=*/3);
    // The first Linear reads pack * K * d_h inputs.
    EXPECT_EQ(critic->parameters()[0].size(1), pack * 3 * m.feature_dim()) << pack;
    EXPECT_EQ(critic->forward(torch::randn({5, pack * 3 * m.feature_dim()})).sizes(),
              (std::vector<int64_t>{5, 1}));
    if (pack > 1) {
      EXPECT_THROW(critic->forward(torch::randn({5, 3 * m.feature_dim()})), c10::Error);
    }
  }
}

// Every parameter and BatchNorm statistic follows avg <- d avg + (1 - d) G with the
// warm-up decay d = min(decay, (1 + n) / (10 + n)) at update n.
TEST(GeneratorAverageTest, FollowsTheWarmedUpMovingAverage) {
  const TableEncoder encoder = MixedEncoder();
  const v1::ModelConfig m = SmallModel("gumbel");
  Generator g(m, encoder.blocks(), encoder.width());
  GeneratorAverage average(Generator(m, encoder.blocks(), encoder.width()), g, 0.15);
  auto state = [](Generator& net) {
    std::vector<torch::Tensor> out;
    for (const auto& p : net->parameters()) out.push_back(p.detach().clone());
    for (const auto& b : net->buffers()) {
      if (b.is_floating_point()) out.push_back(b.detach().clone());
    }
    return out;
  };
  std::vector<torch::Tensor> expected = state(g);
  ASSERT_GT(expected.size(), g->parameters().size());  // BatchNorm running statistics too
  const double decays[] = {0.1, 0.15, 0.15};           // min(0.15, 1/10), min(0.15, 2/11), ...
  for (double d : decays) {
    {
      torch::NoGradGuard no_grad;
      for (auto& p : g->parameters()) p.add_(torch::randn_like(p));
      g->forward(torch::randn({32, 8}), StreamGenerator("k", "g", 0));  // moves BN statistics
    }
    const std::vector<torch::Tensor> now = state(g);
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = d * expected[i] + (1 - d) * now[i];
    average.Update(g);
  }
  EXPECT_EQ(average.updates(), 3);
  const std::vector<torch::Tensor> got = state(average.average());
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(torch::allclose(got[i], expected[i], 1e-5, 1e-6)) << i;
  // The average is a separate module: it is not the live generator.
  EXPECT_FALSE(torch::allclose(got[0], g->parameters()[0]));
}

TEST(NetworksTest, StreamGeneratorsReproduceDraws) {
  const torch::Tensor a = torch::randn({4}, StreamGenerator("k", "z", 3));
  const torch::Tensor b = torch::randn({4}, StreamGenerator("k", "z", 3));
  const torch::Tensor c = torch::randn({4}, StreamGenerator("k", "z", 4));
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, c));
}

}  // namespace
}  // namespace vfsynth
