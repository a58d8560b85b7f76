#include "common/eval/membership_audit.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "common/data/csv.h"
#include "common/data/schema.h"
#include "common/eval/classification_metrics.h"
#include "common/eval/dcr.h"
#include "common/eval/reference_sampler.h"

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
    for (size_t i = 0; i < source.rows.size(); ++i) out.rows.push_back(source.rows[rng() % source.rows.size()]);
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
  const std::vector<double> without = AuditFeatures(table->Subset({0, 1, 2, 4, 5, 6}), target, ranges);
  ASSERT_EQ(with.size(), without.size());
  EXPECT_EQ(with[with.size() - 3], 0.0);  // closest distance: the target itself
  EXPECT_GT(without[without.size() - 3], 0.0);
}

TEST_F(MembershipAuditTest, MemorisingGeneratorIsCaught) {
  // Publishes a bootstrap of its training data: the target appears (or not) verbatim.
  const SyntheticSampler leaky = [](const CsvTable& training, uint64_t seed) -> absl::StatusOr<CsvTable> {
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
  EXPECT_EQ(result->target_record.size(), 15u);
}

TEST_F(MembershipAuditTest, GeneratorIgnoringItsInputLeaksNothing) {
  const CsvTable population = population_;
  const SyntheticSampler blind = [population](const CsvTable&, uint64_t seed) -> absl::StatusOr<CsvTable> {
    return Resample(population, seed);
  };
  AuditOptions options;
  options.shadow_models = 40;
  const auto result = RunMembershipAudit(data_, schema_, blind, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LT(result->accuracy, 0.8);
  EXPECT_EQ(result->epsilon.lower_bound, 0.0);
}

TEST_F(MembershipAuditTest, ReferenceTrainerShadowModelsRun) {
  const std::string dir = (std::filesystem::temp_directory_path() / "vfsynth_audit_test").string();
  ShadowTrainingOptions shadow = SmallShadowConfig(/*rounds=*/5);
  shadow.work_dir = dir;
  shadow.synthetic_rows = 100;
  AuditOptions options;
  options.shadow_models = 3;
  CsvTable small = data_;
  small.rows.resize(120);
  const auto result =
      RunMembershipAudit(small, schema_, MakeReferenceTrainerSampler(schema_, shadow), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->test_in + result->test_out, 2);
  EXPECT_GE(result->accuracy, 0.0);
  EXPECT_LE(result->accuracy, 1.0);
  EXPECT_GT(result->seconds_per_model, 0.0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vfsynth
