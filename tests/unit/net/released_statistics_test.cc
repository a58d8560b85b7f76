// ReleasedStatistics: what the curator accepts as a party's marginal release, that a
// release is never replaced, and its report on a published table with known answers.
#include "server/core/released_statistics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "common/nn/wire_tensor.h"
#include "tests/unit/data/encoder_from_json.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

class ReleasedStatisticsTest : public ::testing::Test {
 protected:
  // Party a: a scalar n and a 2-way m; party b: the label y and a 3-way z.
  TableEncoder a_ = EncoderFromJson(R"({"columns":[{"name":"n","type":"continuous","min":0,"max":1},
      {"name":"m","type":"categorical","categories":["s","t"]}]})");
  TableEncoder b_ =
      EncoderFromJson(R"({"columns":[{"name":"y","type":"categorical","categories":["lo","hi"]},
      {"name":"z","type":"categorical","categories":["p","q","r"]}]})");
  // m: s s t t; y: lo lo hi hi (y equals m); z: p q r r.
  CsvTable published_{{"id", "n", "m", "y", "z"},
                      {{"1", "0.1", "s", "lo", "p"},
                       {"2", "0.5", "s", "lo", "q"},
                       {"3", "0.2", "t", "hi", "r"},
                       {"4", "0.9", "t", "hi", "r"}},
                      {}};
  ReleasedStatistics released_{{"a", "b"}, MarginalOptions{}};

  // The exact release of the published rows by `encoder` (what a party holding them
  // would release without noise).
  v1::MarginalsRequest ExactRelease(const TableEncoder& encoder) {
    auto encoded = encoder.Encode(published_, "published");
    EXPECT_TRUE(encoded.ok()) << encoded.status();
    const torch::Tensor table =
        torch::from_blob(encoded->table.values.data(), {encoded->table.rows, encoded->table.width})
            .clone();
    auto target = MarginalTarget::FromTable(table, encoder.blocks(), MarginalOptions{}, 0, nullptr);
    EXPECT_TRUE(target.ok()) << target.status();
    v1::MarginalsRequest request;
    ToWire(target->probabilities(), request.mutable_probabilities());
    return request;
  }
  static v1::MarginalsRequest Release(const torch::Tensor& probabilities) {
    v1::MarginalsRequest request;
    ToWire(probabilities, request.mutable_probabilities());
    return request;
  }
  static v1::PrivacyPlan Plan(v1::PrivacyConfig::Mode mode, double marginal_z = 0,
                              double label_epsilon = 0) {
    v1::PrivacyPlan plan;
    plan.mutable_privacy()->set_mode(mode);
    plan.set_records(4);
    plan.set_marginal_noise_multiplier(marginal_z);
    plan.set_label_epsilon(label_epsilon);
    return plan;
  }
};

TEST_F(ReleasedStatisticsTest, AcceptsOneReleaseAPartyAndNeverAnotherOne) {
  // b: y (2 cells) and z (3).
  EXPECT_THAT(released_.AddMarginals(1, b_, Release(torch::full({4}, 0.25))).message(),
              HasSubstr("expected shape"));
  EXPECT_THAT(released_.AddMarginals(1, b_, Release(torch::full({5}, 0.5))).message(),
              HasSubstr("not probability vectors"));
  EXPECT_EQ(
      released_.AddMarginals(1, b_, Release(torch::tensor({0.5, 0.5, 0.25, 0.25, 0.5}))).code(),
      absl::StatusCode::kOk);
  EXPECT_TRUE(
      released_.AddMarginals(1, b_, Release(torch::tensor({0.5, 0.5, 0.25, 0.25, 0.5}))).ok());
  const absl::Status other =
      released_.AddMarginals(1, b_, Release(torch::tensor({0.5, 0.5, 0.5, 0.25, 0.25})));
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.message(), HasSubstr("'b' sent another marginal release than before"));
}

TEST_F(ReleasedStatisticsTest, ReportsNothingWhenNothingWasReleased) {
  auto report = released_.Report(published_, {&a_, &b_}, Plan(v1::PrivacyConfig::strict, 2.0));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->has_value());
  EXPECT_FALSE(released_.Report(published_, {&a_}, Plan(v1::PrivacyConfig::strict)).ok());
}

TEST_F(ReleasedStatisticsTest, ScoresThePublishedTableAgainstEveryPartysRelease) {
  ASSERT_TRUE(released_.AddMarginals(0, a_, ExactRelease(a_)).ok());
  ASSERT_TRUE(released_.AddMarginals(1, b_, ExactRelease(b_)).ok());
  auto exact = released_.Report(published_, {&a_, &b_}, Plan(v1::PrivacyConfig::none));
  ASSERT_TRUE(exact.ok()) << exact.status();
  ASSERT_TRUE(exact->has_value());
  const v1::ReleasedFidelity& report = **exact;
  ASSERT_EQ(report.histograms_size(), 3);  // m; y, z (n has no histogram)
  EXPECT_EQ(report.histograms(0).party(), "a");
  EXPECT_EQ(report.histograms(0).histogram(), "m");
  EXPECT_EQ(report.histograms(2).party(), "b");
  EXPECT_EQ(report.histograms(2).histogram(), "z");
  EXPECT_DOUBLE_EQ(report.score(), 1.0);
  EXPECT_DOUBLE_EQ(report.noise_floor(), 0.0);  // mode none: exact releases

  // Another published table: every z is p, TVD ½(¾ + ¼ + ½) = ¾ there.
  CsvTable other = published_;
  for (auto& row : other.rows) row[4] = "p";
  // Under strict's noise (z_m 0.5, two histograms: σ = 0.5·√4 = 1 count of 4 records).
  auto noised = released_.Report(other, {&a_, &b_}, Plan(v1::PrivacyConfig::strict, 0.5));
  ASSERT_TRUE(noised.ok() && noised->has_value()) << noised.status();
  EXPECT_NEAR((*noised)->histograms(2).distance(), 0.75, 1e-6);
  EXPECT_NEAR((*noised)->score(), 1.0 - 0.75 / 3, 1e-6);
  for (const auto& histogram : (*noised)->histograms()) EXPECT_GT(histogram.noise_distance(), 0.0);
}

TEST_F(ReleasedStatisticsTest, LabelPairsAreScoredInTheJointEncoding) {
  // The label y at b (joint offset 3) against a's m (joint offset 1): released as equal.
  auto target = MarginalTarget::FromPairProbabilities(
      {{BlockKind::kSoftmax, 3, 2}, {BlockKind::kSoftmax, 1, 2}}, {{0, 1}},
      torch::tensor({0.5, 0.0, 0.0, 0.5}, torch::kDouble));
  ASSERT_TRUE(target.ok()) << target.status();
  released_.SetLabelPairs(*target, /*holder=*/1, "y");
  auto report = released_.Report(published_, {&a_, &b_}, Plan(v1::PrivacyConfig::strict, 0.5, 1.0));
  ASSERT_TRUE(report.ok() && report->has_value()) << report.status();
  ASSERT_EQ((*report)->histograms_size(), 1);
  EXPECT_EQ((*report)->histograms(0).histogram(), "y x m");
  EXPECT_EQ((*report)->histograms(0).kind(), "label_pair");
  EXPECT_EQ((*report)->histograms(0).party(), "a");
  EXPECT_NEAR((*report)->histograms(0).distance(), 0.0, 1e-6);  // the published y equals m too
  EXPECT_GT((*report)->histograms(0).noise_distance(), 0.0);
  ASSERT_EQ((*report)->label_dependence_size(), 1);
  EXPECT_NEAR((*report)->label_dependence(0).released(), 0.5, 1e-6);
  EXPECT_NEAR((*report)->label_dependence(0).published(), 0.5, 1e-6);
}

TEST(ReleasedFidelityPathTest, SitsBesideTheTable) {
  EXPECT_EQ(ReleasedFidelityPath("/out/synthetic.csv"), "/out/synthetic.released.json");
}

}  // namespace
}  // namespace vfsynth
