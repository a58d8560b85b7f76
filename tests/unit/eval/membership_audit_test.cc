#include "common/eval/membership_audit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "absl/strings/str_format.h"
#include "common/data/csv.h"
#include "common/data/schema.h"
#include "common/eval/audit_canary.h"
#include "common/eval/classification_metrics.h"
#include "common/eval/dcr.h"

namespace vfsynth {
namespace {

class MembershipAuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = LoadSchema(VFSYNTH_SOURCE_DIR "/deploy/schemas/adult.schema.json");
    ASSERT_TRUE(schema.ok()) << schema.status();
    schema_ = *schema;
    auto adult = ReadCsv(VFSYNTH_DATASETS_DIR "/adult.csv");
    ASSERT_TRUE(adult.ok()) << adult.status();
    data_.header = adult->header;
    population_.header = adult->header;
    for (int64_t i : SampleRows(adult->rows.size(), 400, 5)) {
      (data_.rows.size() < 200 ? data_.rows : population_.rows).push_back(adult->rows[i]);
    }
  }

  // Bootstrap of `source` with `seed`.
  static CsvTable Resample(const CsvTable& source, uint64_t seed) {
    std::mt19937_64 rng(seed);
    CsvTable out;
    out.header = source.header;
    for (size_t i = 0; i < source.rows.size(); ++i)
      out.rows.push_back(source.rows[rng() % source.rows.size()]);
    return out;
  }

  v1::Schema schema_;
  CsvTable data_;        // D
  CsvTable population_;  // other Adult rows, never containing the target
};

TEST(RocAucTest, HandComputed) {
  EXPECT_DOUBLE_EQ(RocAuc({0.9, 0.8, 0.3, 0.1}, {1, 1, 0, 0}), 1.0);
  EXPECT_DOUBLE_EQ(RocAuc({0.1, 0.8, 0.3, 0.9}, {1, 1, 0, 0}), 0.25);  // only 0.8 > 0.3 of 4 pairs
  EXPECT_DOUBLE_EQ(RocAuc({0.5, 0.5}, {1, 0}), 0.5);
}

TEST_F(MembershipAuditTest, FeaturesSeeTheTargetInTheSet) {
  const auto table = MakeEvalTable(data_, schema_, "d");
  ASSERT_TRUE(table.ok());
  const std::vector<double> ranges = ColumnRanges({&*table});
  const EvalTable target = table->Subset({3});
  const std::vector<double> with = AuditFeatures(*table, target, ranges);
  const std::vector<double> without =
      AuditFeatures(table->Subset({0, 1, 2, 4, 5, 6}), target, ranges);
  ASSERT_EQ(with.size(), without.size());
  EXPECT_EQ(with[with.size() - 3], 0.0);  // closest distance: the target itself
  EXPECT_GT(without[without.size() - 3], 0.0);
}

TEST_F(MembershipAuditTest, MemorisingGeneratorIsCaught) {
  // Publishes a bootstrap of its training data: the target appears (or not) verbatim.
  const SyntheticSampler leaky = [](const CsvTable& training,
                                    uint64_t seed) -> absl::StatusOr<CsvTable> {
    CsvTable out = Resample(training, seed);
    out.rows.insert(out.rows.end(), training.rows.begin(), training.rows.end());
    return out;
  };
  AuditOptions options;
  options.shadow_models = 40;
  const auto result = RunMembershipAudit(data_, schema_, leaky, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->test_in, 12);
  EXPECT_EQ(result->test_out, 12);
  EXPECT_DOUBLE_EQ(result->accuracy, 1.0);
  EXPECT_DOUBLE_EQ(result->auc, 1.0);
  // 0/12 errors each: FNR_ub = FPR_ub = 1 - 0.025^(1/12) = 0.2646 -> ln(0.7354/0.2646).
  EXPECT_NEAR(result->epsilon.lower_bound, std::log((1 - 1e-5 - 0.26465) / 0.26465), 2e-3);
  EXPECT_DOUBLE_EQ(result->attainable_epsilon, result->epsilon.lower_bound);  // a perfect attack
  EXPECT_EQ(result->target_record.size(), 15u);
}

TEST_F(MembershipAuditTest, GeneratorIgnoringItsInputLeaksNothing) {
  const CsvTable population = population_;
  const SyntheticSampler blind = [population](const CsvTable&,
                                              uint64_t seed) -> absl::StatusOr<CsvTable> {
    return Resample(population, seed);
  };
  AuditOptions options;
  options.shadow_models = 40;
  const auto result = RunMembershipAudit(data_, schema_, blind, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LT(result->accuracy, 0.8);
  EXPECT_EQ(result->epsilon.lower_bound, 0.0);
}

TEST_F(MembershipAuditTest, CanaryIsTheTargetAndOnlyTheTrainingWithItSeesIt) {
  const auto canary = CanaryRecord(data_, schema_);
  ASSERT_TRUE(canary.ok()) << canary.status();
  std::vector<size_t> sizes;
  bool with_has_canary = true, without_has_canary = false;
  const std::vector<std::string> record = *canary;
  const SyntheticSampler echo = [&](const CsvTable& training,
                                    uint64_t) -> absl::StatusOr<CsvTable> {
    const bool has =
        std::find(training.rows.begin(), training.rows.end(), record) != training.rows.end();
    if (training.rows.size() == data_.rows.size() + 1) with_has_canary &= has;
    if (training.rows.size() == data_.rows.size()) without_has_canary |= has;
    sizes.push_back(training.rows.size());
    return training;
  };
  AuditOptions options;
  options.shadow_models = 4;
  options.neighbour = AuditNeighbour::kRemove;
  options.canary = record;
  const auto result = RunMembershipAudit(data_, schema_, echo, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->canary);
  EXPECT_EQ(result->target_row, static_cast<int64_t>(data_.rows.size()));
  EXPECT_EQ(result->target_record, record);  // Adult's header is the schema's column order
  EXPECT_TRUE(with_has_canary);
  EXPECT_FALSE(without_has_canary);
  EXPECT_EQ(std::count(sizes.begin(), sizes.end(), data_.rows.size() + 1), 4);
  EXPECT_EQ(std::count(sizes.begin(), sizes.end(), data_.rows.size()), 4);
  EXPECT_DOUBLE_EQ(result->accuracy, 1.0);  // the published set holds the canary or not

  options.target_row = 3;
  EXPECT_EQ(RunMembershipAudit(data_, schema_, echo, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The privacy modes are calibrated for replace-one neighbours: by default the audit
// compares D with D where the target's row holds a typical record instead, same size.
TEST_F(MembershipAuditTest, TheDefaultNeighbourReplacesTheTargetWithATypicalRecord) {
  const auto canary = CanaryRecord(data_, schema_);
  ASSERT_TRUE(canary.ok()) << canary.status();
  const std::vector<std::string> record = *canary;
  int with = 0, replaced = 0;
  std::vector<std::string> stand_in;
  const SyntheticSampler echo = [&](const CsvTable& training,
                                    uint64_t) -> absl::StatusOr<CsvTable> {
    EXPECT_EQ(training.rows.size(), data_.rows.size() + 1);
    if (training.rows.back() == record) {
      ++with;
    } else {
      ++replaced;
      stand_in = training.rows.back();
      // Every other row is D's, unchanged.
      EXPECT_TRUE(std::equal(data_.rows.begin(), data_.rows.end(), training.rows.begin()));
    }
    return training;
  };
  AuditOptions options;
  options.shadow_models = 4;
  options.canary = record;
  const auto result = RunMembershipAudit(data_, schema_, echo, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->neighbour, AuditNeighbour::kReplace);
  EXPECT_EQ(with, 4);
  EXPECT_EQ(replaced, 4);
  ASSERT_GE(result->replacement_row, 0);
  ASSERT_LT(result->replacement_row, static_cast<int64_t>(data_.rows.size()));
  EXPECT_EQ(stand_in, data_.rows[result->replacement_row]);
  const std::string json = AuditJson(*result, PublishedClaim{});
  EXPECT_NE(json.find("\"neighbour\": \"replace\""), std::string::npos) << json;
  EXPECT_FALSE(ParseAuditNeighbour("swap").ok());
}

// The default model count cannot show any ε > 0, so the audit states what it could show.
TEST_F(MembershipAuditTest, TheAttainableBoundIsAPerfectAttacksOnTheHeldOutSets) {
  AuditOptions options;
  EXPECT_EQ(HeldOutPerSide(options), 3);
  EXPECT_EQ(AttainableEpsilonBound(options), 0);
  options.shadow_models = 100;
  EXPECT_EQ(HeldOutPerSide(options), 30);
  // 0/30 errors each: u = 1 - 0.025^(1/30) -> ln((1 - δ - u) / u).
  const double u = 1 - std::pow(0.025, 1.0 / 30);
  EXPECT_NEAR(AttainableEpsilonBound(options), std::log((1 - 1e-5 - u) / u), 1e-3);
}

TEST_F(MembershipAuditTest, AuditJsonStatesTheClaimBesideTheBound) {
  AuditResult result;
  result.canary = true;
  PublishedClaim dp{"strict", 1.0, ""};
  const std::string with_claim = AuditJson(result, dp);
  EXPECT_NE(with_claim.find("\"privacy_mode\": \"strict\""), std::string::npos) << with_claim;
  EXPECT_NE(with_claim.find("\"claimed_epsilon\": 1"), std::string::npos) << with_claim;
  EXPECT_NE(with_claim.find("\"target\": \"canary\""), std::string::npos) << with_claim;
  EXPECT_NE(with_claim.find("\"epsilon_lower_bound\""), std::string::npos) << with_claim;
  EXPECT_NE(with_claim.find("\"epsilon_lower_bound_attainable\""), std::string::npos)
      << with_claim;
  PublishedClaim none{"none", std::nullopt, "mode none adds no noise"};
  const std::string without_claim = AuditJson(result, none);
  EXPECT_EQ(without_claim.find("claimed_epsilon"), std::string::npos) << without_claim;
  EXPECT_NE(without_claim.find("\"differentially_private\": false"), std::string::npos)
      << without_claim;
  EXPECT_NE(without_claim.find("mode none adds no noise"), std::string::npos) << without_claim;
}

TEST_F(MembershipAuditTest, CanaryIsBuiltFromTheSchemaAndLiesOutsideTheData) {
  const auto canary = CanaryRecord(data_, schema_);
  ASSERT_TRUE(canary.ok()) << canary.status();
  ASSERT_EQ(canary->size(), data_.header.size());
  for (const v1::Column& column : schema_.columns()) {
    const std::string& value = (*canary)[data_.ColumnIndex(column.name())];
    if (column.type() == "categorical") {
      EXPECT_NE(std::find(column.categories().begin(), column.categories().end(), value),
                column.categories().end())
          << column.name() << " = " << value;
    } else {
      EXPECT_TRUE(value == absl::StrFormat("%.17g", column.min()) ||
                  value == absl::StrFormat("%.17g", column.max()))
          << column.name() << " = " << value << " is not a declared bound";
    }
  }
  // Farther from its nearest real record than the most isolated real record is from its own.
  CsvTable with = data_;
  with.rows.push_back(*canary);
  const auto table = MakeEvalTable(with, schema_, "d");
  ASSERT_TRUE(table.ok()) << table.status();
  const std::vector<double> nearest = NearestNeighbourDistances(*table, ColumnRanges({&*table}));
  const double canary_distance = nearest.back();
  EXPECT_GT(canary_distance, *std::max_element(nearest.begin(), nearest.end() - 1));
  // And the distance is large in absolute terms: most columns differ from every real record.
  EXPECT_GT(canary_distance, 0.5);
}

}  // namespace
}  // namespace vfsynth
