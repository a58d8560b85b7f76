// CrossPartyIndependence: which block pairs it covers, the batch mutual information and
// its gradient.
#include "common/gan/cross_party_independence.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/data/encoder_from_json.h"

namespace vfsynth {
namespace {

// Party 0: a 2-way categorical (columns 0-1) and a scalar (column 2); party 1: a 2-way
// categorical (columns 3-4) and a 3-way one (columns 5-7).
class CrossPartyIndependenceTest : public ::testing::Test {
 protected:
  TableEncoder first_ = EncoderFromJson(R"({"columns":[
      {"name":"a","type":"categorical","categories":["x","y"]},
      {"name":"s","type":"continuous","min":0,"max":1}]})");
  TableEncoder second_ = EncoderFromJson(R"({"columns":[
      {"name":"b","type":"categorical","categories":["x","y"]},
      {"name":"c","type":"categorical","categories":["x","y","z"]}]})");
  CrossPartyIndependence prior_{{&first_, &second_}};
};

TEST_F(CrossPartyIndependenceTest, CoversOnlyPairsAcrossParties) {
  // a-b and a-c; b-c is within party 1 and the scalar has no block.
  EXPECT_EQ(prior_.pairs(), 2);
}

TEST_F(CrossPartyIndependenceTest, LeavesTheExcludedColumnOut) {
  // Label pairs give G the label's dependence; the prior must not pull it away.
  EXPECT_EQ(CrossPartyIndependence({&first_, &second_}, "a").pairs(), 0);
  const CrossPartyIndependence without_b({&first_, &second_}, "b");
  EXPECT_EQ(without_b.pairs(), 1);  // a-c only
  // b copies a (c constant): the full prior sees ln 2, the one without b nothing.
  const torch::Tensor copied = torch::tensor({{1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0},
                                              {1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0},
                                              {0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0},
                                              {0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0}},
                                             torch::kFloat32);
  EXPECT_NEAR(prior_.Loss(copied).item<double>(), std::log(2.0), 1e-5);
  EXPECT_NEAR(without_b.Loss(copied).item<double>(), 0.0, 1e-6);
  EXPECT_EQ(CrossPartyIndependence({&first_, &second_}, "absent").pairs(), 2);
}

TEST_F(CrossPartyIndependenceTest, ZeroForAProductBatchAndTheMutualInformationOtherwise) {
  // Every combination of a and b once (c constant): a and b independent, c carries nothing.
  const torch::Tensor independent = torch::tensor({{1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0},
                                                   {1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0},
                                                   {0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0},
                                                   {0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0}},
                                                  torch::kFloat32);
  EXPECT_NEAR(prior_.Loss(independent).item<double>(), 0.0, 1e-6);
  // b copies a: I(a; b) = ln 2; c still constant.
  torch::Tensor copied = independent.clone();
  copied[1][3] = 1;
  copied[1][4] = 0;
  copied[2][3] = 0;
  copied[2][4] = 1;
  EXPECT_NEAR(prior_.Loss(copied).item<double>(), std::log(2.0), 1e-5);
}

TEST_F(CrossPartyIndependenceTest, IsTheSumOfEachCrossPartyPairsMutualInformation) {
  // Random relaxed rows: the loss equals I(a; b) + I(a; c), each from its own 2-D joint.
  torch::manual_seed(4);
  torch::Tensor batch = torch::rand({16, 8});
  batch.narrow(1, 0, 2) = torch::softmax(batch.narrow(1, 0, 2) * 3, 1);
  batch.narrow(1, 3, 2) = torch::softmax(batch.narrow(1, 3, 2) * 3, 1);
  batch.narrow(1, 5, 3) = torch::softmax(batch.narrow(1, 5, 3) * 3, 1);
  auto mutual_information = [&](int64_t left_offset, int64_t left_width, int64_t right_offset,
                                int64_t right_width) {
    const torch::Tensor left = batch.narrow(1, left_offset, left_width).to(torch::kDouble);
    const torch::Tensor right = batch.narrow(1, right_offset, right_width).to(torch::kDouble);
    const torch::Tensor joint = left.t().mm(right) / 16.0;
    const torch::Tensor product = left.mean(0).unsqueeze(1) * right.mean(0).unsqueeze(0);
    return (joint * (joint / product).log()).sum().item<double>();
  };
  const double expected = mutual_information(0, 2, 3, 2) + mutual_information(0, 2, 5, 3);
  EXPECT_GT(expected, 1e-3);
  EXPECT_NEAR(prior_.Loss(batch).item<double>(), expected, 1e-5);
}

TEST_F(CrossPartyIndependenceTest, GradientLoosensTheCoupling) {
  // b mostly follows a: the gradient on row 0 (a = x) favours b = y, the value it lacks.
  torch::Tensor coupled = torch::tensor({{0.9, 0.1, 0.0, 0.9, 0.1, 1.0, 0.0, 0.0},
                                         {0.9, 0.1, 0.0, 0.8, 0.2, 1.0, 0.0, 0.0},
                                         {0.1, 0.9, 0.0, 0.2, 0.8, 1.0, 0.0, 0.0},
                                         {0.1, 0.9, 0.0, 0.1, 0.9, 1.0, 0.0, 0.0}},
                                        torch::kFloat32)
                              .requires_grad_(true);
  const torch::Tensor loss = prior_.Loss(coupled);
  EXPECT_GT(loss.item<double>(), 0.1);
  loss.backward();
  EXPECT_LT(coupled.grad()[0][4].item<double>(), coupled.grad()[0][3].item<double>());
  EXPECT_EQ(coupled.grad()[0][2].item<double>(), 0.0);  // the scalar is not in any pair
}

}  // namespace
}  // namespace vfsynth
