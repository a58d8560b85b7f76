// ScoreAgainstReleases: a published table scored against released histograms, the noise
// distance of a release from its known noise, and the label's cross-party dependence.
#include "common/gan/released_fidelity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/gan/small_encoded_table.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

std::vector<OutputBlock> Blocks() { return SmallTableBlocks(); }
torch::Tensor Table() { return SmallTable(); }

ReleasedHistograms Exact(const torch::Tensor& table, int pair_cells = 0, double noise = 0) {
  auto target =
      MarginalTarget::FromTable(table, Blocks(), MarginalOptions{1, pair_cells}, 0, nullptr);
  EXPECT_TRUE(target.ok()) << target.status();
  return ReleasedHistograms{*target, {"a", "b"}, {"bank", "bank"}, {noise, noise}};
}

TEST(ReleasedFidelityTest, TheTableAnExactReleaseCountedScoresOne) {
  auto report = ScoreAgainstReleases({Exact(Table(), /*pair_cells=*/6)}, {Table()}, 4);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_DOUBLE_EQ(report->score(), 1.0);
  EXPECT_DOUBLE_EQ(report->noise_floor(), 0.0);
  EXPECT_EQ(report->records(), 4);
  ASSERT_EQ(report->histograms_size(), 3);
  EXPECT_EQ(report->histograms(0).histogram(), "a");
  EXPECT_EQ(report->histograms(0).kind(), "marginal");
  EXPECT_EQ(report->histograms(0).cells(), 3);
  EXPECT_EQ(report->histograms(2).histogram(), "a x b");
  EXPECT_EQ(report->histograms(2).kind(), "pair");
  EXPECT_EQ(report->histograms(2).cells(), 6);
  EXPECT_EQ(report->histograms(2).party(), "bank");
  for (const auto& histogram : report->histograms()) EXPECT_DOUBLE_EQ(histogram.distance(), 0.0);
  EXPECT_TRUE(report->label_dependence().empty());
}

TEST(ReleasedFidelityTest, ATableAddedInChunksScoresAsTheWholeTable) {
  // Rows of the small table in another mix, added one and three rows at a time.
  const torch::Tensor published = torch::cat({Table(), Table().narrow(0, 1, 2)}, 0);
  const std::vector<ReleasedHistograms> releases = {Exact(Table(), /*pair_cells=*/6, 0.5)};
  auto whole = ScoreAgainstReleases(releases, {published}, 4);
  PublishedHistograms chunks(releases);
  ASSERT_TRUE(chunks.Add({published.narrow(0, 0, 1)}).ok());
  ASSERT_TRUE(chunks.Add({published.narrow(0, 1, 5)}).ok());
  EXPECT_EQ(chunks.rows(), 6);
  auto chunked = ScoreAgainstReleases(releases, chunks, 4);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_TRUE(chunked.ok()) << chunked.status();
  EXPECT_LT(whole->score(), 1.0);
  EXPECT_EQ(chunked->SerializeAsString(), whole->SerializeAsString());
  EXPECT_FALSE(chunks.Add({published.narrow(1, 0, 2)}).ok());  // narrower than the release
}

TEST(ReleasedFidelityTest, DistanceIsTheTotalVariationFromTheRelease) {
  // Every published row in block 1's first category: TVD ½(½ + ¼ + ¼) = ½ there, 0 in
  // block 2 (unchanged); the score is 1 − their mean.
  torch::Tensor published = Table().clone();
  published.narrow(1, 0, 3).zero_();
  published.select(1, 0).fill_(1.0);
  auto report = ScoreAgainstReleases({Exact(Table())}, {published}, 4);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->histograms_size(), 2);
  EXPECT_NEAR(report->histograms(0).distance(), 0.5, 1e-12);
  EXPECT_NEAR(report->histograms(1).distance(), 0.0, 1e-12);
  EXPECT_NEAR(report->score(), 0.75, 1e-12);
}

TEST(ReleasedFidelityTest, NoiseDistanceIsTheGaussiansExpectedTotalVariation) {
  // Four cells of 2,500 records each, σ = 50 per count: the projection only removes the
  // noise's mean, so each cell is off by ε_i − ε̄, E|·| = σ·√(3/4)·√(2/π), and the
  // expected TVD is ½·4·that/N.
  const std::vector<OutputBlock> blocks = {{BlockKind::kSoftmax, 0, 4}};
  auto target = MarginalTarget::FromRelease(blocks, MarginalOptions{},
                                            torch::full({4}, 0.25, torch::kDouble));
  ASSERT_TRUE(target.ok()) << target.status();
  const double n = 10000, sigma = 50;
  ReleasedHistograms release{*target, {"a"}, {"bank"}, {sigma}};
  auto report = ScoreAgainstReleases({release}, {torch::eye(4).repeat({2, 1})}, n, /*draws=*/400);
  ASSERT_TRUE(report.ok()) << report.status();
  const double expected = 0.5 * 4 * sigma * std::sqrt(0.75) * std::sqrt(2 / M_PI) / n;
  EXPECT_NEAR(report->histograms(0).noise_distance(), expected, 0.05 * expected);
  EXPECT_NEAR(report->noise_floor(), expected, 0.05 * expected);
  EXPECT_DOUBLE_EQ(report->histograms(0).distance(), 0.0);  // the published rows are uniform too
}

// A label (2 categories, columns 0-1) against another party's 2-way column (2-3).
ReleasedHistograms LabelRelease(const torch::Tensor& probabilities, double keep, double noise = 0) {
  auto target = MarginalTarget::FromPairProbabilities(
      {{BlockKind::kSoftmax, 0, 2}, {BlockKind::kSoftmax, 2, 2}}, {{0, 1}}, probabilities);
  EXPECT_TRUE(target.ok()) << target.status();
  ReleasedHistograms release{*target, {"class", "x"}, {"bank", "hospital"}, {0.0, noise}};
  release.label_pairs = true;
  release.label_keep = keep;
  return release;
}

TEST(ReleasedFidelityTest, LabelPairsShowTheLabelsDependenceInReleaseAndTable) {
  // Released: the label equals x (dependence ½); published: the two independent.
  const torch::Tensor equal = torch::tensor({0.5, 0.0, 0.0, 0.5}, torch::kDouble);
  const torch::Tensor independent = torch::tensor(
      {{1.0, 0.0, 1.0, 0.0}, {1.0, 0.0, 0.0, 1.0}, {0.0, 1.0, 1.0, 0.0}, {0.0, 1.0, 0.0, 1.0}});
  auto report = ScoreAgainstReleases({LabelRelease(equal, 0.9)}, {independent}, 1000);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->histograms_size(), 1);
  EXPECT_EQ(report->histograms(0).histogram(), "class x x");
  EXPECT_EQ(report->histograms(0).kind(), "label_pair");
  EXPECT_EQ(report->histograms(0).party(), "hospital");
  EXPECT_NEAR(report->histograms(0).distance(), 0.5, 1e-12);
  ASSERT_EQ(report->label_dependence_size(), 1);
  EXPECT_NEAR(report->label_dependence(0).released(), 0.5, 1e-12);
  EXPECT_NEAR(report->label_dependence(0).published(), 0.0, 1e-12);
  EXPECT_EQ(report->label_dependence(0).party(), "hospital");
}

TEST(ReleasedFidelityTest, LabelNoiseGrowsAsRandomizedResponseKeepsFewerLabels) {
  const torch::Tensor table = torch::tensor({0.3, 0.2, 0.1, 0.4}, torch::kDouble);
  const torch::Tensor rows = torch::eye(4).narrow(0, 0, 4);  // any published rows
  auto noise_at = [&](double keep, double noise) {
    auto report = ScoreAgainstReleases({LabelRelease(table, keep, noise)}, {rows}, 2000, 100);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? report->histograms(0).noise_distance() : -1.0;
  };
  const double sharp = noise_at(0.95, 0), blurred = noise_at(0.6, 0), noised = noise_at(0.95, 30);
  EXPECT_GT(sharp, 0);
  EXPECT_GT(blurred, 2 * sharp);  // the inversion multiplies the sampling noise by 1/(2·keep − 1)
  EXPECT_GT(noised, 2 * sharp);
  EXPECT_LT(blurred, 0.2);
}

TEST(ReleasedFidelityTest, RefusesInputsThatDoNotFit) {
  EXPECT_FALSE(ScoreAgainstReleases({Exact(Table())}, {}, 4).ok());
  EXPECT_FALSE(ScoreAgainstReleases({Exact(Table())}, {Table()}, 0).ok());
  ReleasedHistograms unnamed = Exact(Table());
  unnamed.block_names.pop_back();
  EXPECT_THAT(ScoreAgainstReleases({unnamed}, {Table()}, 4).status().message(),
              HasSubstr("per block"));
  EXPECT_THAT(
      ScoreAgainstReleases({Exact(Table())}, {Table().narrow(1, 0, 4)}, 4).status().message(),
      HasSubstr("ends past them"));
  ReleasedHistograms negative = Exact(Table(), 0, -1.0);
  EXPECT_FALSE(ScoreAgainstReleases({negative}, {Table()}, 4).ok());
  EXPECT_THAT(ScoreAgainstReleases({}, {}, 4).status().message(),
              HasSubstr("no released histogram"));
}

TEST(ReleasedFidelityTest, AReleaseOfTheWrongSizeOrNotADistributionIsRefused) {
  const std::vector<OutputBlock> blocks = Blocks();
  EXPECT_EQ(MarginalTarget::ReleaseCells(blocks, MarginalOptions{1, 0}), 5);
  EXPECT_EQ(MarginalTarget::ReleaseCells(blocks, MarginalOptions{1, 6}), 11);
  EXPECT_FALSE(MarginalTarget::FromRelease(blocks, MarginalOptions{}, torch::full({4}, 0.25)).ok());
  EXPECT_FALSE(MarginalTarget::FromRelease(blocks, MarginalOptions{},
                                           torch::tensor({0.5, 0.5, 0.5, 0.5, 0.5}))
                   .ok());
  auto fine = MarginalTarget::FromRelease(blocks, MarginalOptions{},
                                          torch::tensor({0.5, 0.25, 0.25, 0.25, 0.75}));
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_TRUE(torch::allclose(fine->TableProbabilities(Table()), fine->probabilities()));
}

}  // namespace
}  // namespace vfsynth
