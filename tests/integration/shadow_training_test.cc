// The audit's shadow models through the daemons' code: the noise-free run is the
// reference trainer's, a DP run plans, calibrates and charges every party's ledger.
#include "client/cli/shadow_training.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/proto_json.h"
#include "common/config/config.h"
#include "common/data/schema.h"
#include "common/eval/eval_table.h"
#include "common/gan/reference_trainer.h"
#include "common/privacy/privacy_plan.h"

namespace vfsynth {
namespace {

namespace fs = std::filesystem;

// 150 Adult records: a batch of 64 fits with or without any one of them.
CsvTable AdultRecords() {
  absl::StatusOr<CsvTable> adult = ReadCsv(VFSYNTH_DATASETS_DIR "/adult.csv");
  EXPECT_TRUE(adult.ok()) << adult.status();
  CsvTable records;
  if (!adult.ok()) return records;
  records.header = adult->header;
  for (int64_t i : SampleRows(adult->rows.size(), 150, 3)) records.rows.push_back(adult->rows[i]);
  return records;
}

class ShadowTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        (fs::temp_directory_path() / absl::StrCat("vfsynth_shadow_training_", getpid())).string();
    fs::create_directories(dir_);
    options_ = SmallShadowConfig(/*rounds=*/3);  // three parties, three rounds
    options_.work_dir = dir_ + "/work";
    ASSERT_TRUE(
        LoadJsonFile(VFSYNTH_SOURCE_DIR "/deploy/parties/adult-3.json", &options_.parties).ok());
    absl::StatusOr<v1::Schema> schema =
        LoadSchema(VFSYNTH_SOURCE_DIR "/deploy/schemas/adult.schema.json");
    ASSERT_TRUE(schema.ok()) << schema.status();
    schema_ = *std::move(schema);
    data_ = AdultRecords();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
  v1::Schema schema_;
  CsvTable data_;
  ShadowTrainingOptions options_;
};

constexpr uint64_t kSeed = 7;

TEST_F(ShadowTrainingTest, NoiseFreeRunIsTheReferenceTrainersTable) {
  ASSERT_TRUE(SetMarginalReleaseDefaults(/*prior=*/true, &options_.training)
                  .ok());  // as the audit runs mode none
  const auto run = TrainShadowModel(schema_, options_, data_, kSeed);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_FALSE(Guarantee(run->plan, Observer::kPublished).has_epsilon_planned());
  EXPECT_EQ(run->party_epsilon_spent, std::vector<double>(3, 0.0));  // no ledger
  EXPECT_FALSE(fs::exists(options_.work_dir + "/shadow_7"));         // scratch removed

  v1::LocalRunConfig local;
  const auto files = WriteShadowPartyFiles(schema_, options_.parties, data_, dir_);
  ASSERT_TRUE(files.ok()) << files.status();
  for (const v1::PartyDataConfig& party : *files) *local.add_parties() = party;
  *local.mutable_model() = options_.model;
  *local.mutable_training() = options_.training;
  local.mutable_training()->set_seed(kSeed);
  local.set_sampling_secret(ShadowRunSecrets(kSeed).sampling_secret);
  local.set_alignment_key(ShadowRunSecrets(kSeed).alignment_key);
  ASSERT_TRUE(ResolveLocalRunConfig("", &local).ok());
  auto reference = ReferenceTrainer::Create(local);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_TRUE((*reference)->Train().ok());
  const auto table = (*reference)->Synthesize(static_cast<int64_t>(data_.rows.size()));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(run->synthetic.header, table->header);
  EXPECT_EQ(run->synthetic.rows, table->rows);
}

TEST_F(ShadowTrainingTest, StrictRunCalibratesToTheBudgetAndChargesEveryLedger) {
  auto privacy = ShadowPrivacy("strict", 2.0, 1e-5);
  ASSERT_TRUE(privacy.ok()) << privacy.status();
  options_.privacy = *privacy;
  const auto run = TrainShadowModel(schema_, options_, data_, kSeed);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->plan.privacy().mode(), v1::PrivacyConfig::strict);
  EXPECT_EQ(run->plan.parties(), 3);
  EXPECT_EQ(run->plan.records(), 150);
  EXPECT_GT(run->plan.noise_multiplier(), 0);
  EXPECT_GT(run->plan.marginal_noise_multiplier(), 0);  // the marginal release is on, as shipped
  const v1::ObserverGuarantee& published = Guarantee(run->plan, Observer::kPublished);
  ASSERT_TRUE(published.has_epsilon_planned());
  EXPECT_NEAR(published.epsilon_planned(), 2.0, 1e-3);
  ASSERT_EQ(run->party_epsilon_spent.size(), 3u);
  for (double spent : run->party_epsilon_spent)
    EXPECT_NEAR(spent, 2.0, 1e-3);  // every step charged
  EXPECT_EQ(run->synthetic.rows.size(), 150u);

  // The noise reached the model: the same seed trains another table than without DP.
  options_.privacy = SmallShadowConfig(3).privacy;
  const auto noise_free = TrainShadowModel(schema_, options_, data_, kSeed);
  ASSERT_TRUE(noise_free.ok()) << noise_free.status();
  EXPECT_NE(run->synthetic.rows, noise_free->synthetic.rows);
}

TEST_F(ShadowTrainingTest, MarginalsRunMeasuresOnceAndChargesEveryLedgerThePlansEpsilon) {
  const auto privacy = ShadowPrivacy("marginals", 1.0, 1e-5);
  ASSERT_TRUE(privacy.ok()) << privacy.status();
  auto options = AuditShadowConfig(*privacy, /*rounds=*/20);
  ASSERT_TRUE(options.ok()) << options.status();
  options->work_dir = options_.work_dir;
  options->parties = options_.parties;
  options->training.set_batch_size(64);  // the fit's rows per step, within these 150 records
  const auto run = TrainShadowModel(schema_, *options, data_, kSeed);
  ASSERT_TRUE(run.ok()) << run.status();

  // The measured-marginals protocol ran (the vertical rounds plan no histograms).
  EXPECT_EQ(run->plan.privacy().mode(), v1::PrivacyConfig::marginals);
  EXPECT_EQ(run->plan.parties(), 3);
  EXPECT_EQ(run->plan.records(), 150);
  EXPECT_EQ(run->plan.columns_size(), schema_.columns_size());
  int cross = 0;
  for (const v1::MeasuredHistogram& m : run->plan.measurements()) cross += m.cross_party();
  EXPECT_GT(cross, 0) << "no histogram across parties: no secure count ran";
  for (const v1::ObserverGuarantee& g : run->plan.guarantees()) {
    ASSERT_TRUE(g.has_epsilon_planned()) << g.observer();
    EXPECT_NEAR(g.epsilon_planned(), 1.0, 1e-3) << g.observer();  // one ε for every observer
  }
  ASSERT_EQ(run->party_epsilon_spent.size(), 3u);
  for (double spent : run->party_epsilon_spent) EXPECT_NEAR(spent, 1.0, 1e-3);
  EXPECT_EQ(run->synthetic.rows.size(), 150u);
  std::vector<std::string> columns;  // every schema column, in the parties' order
  for (const v1::Column& column : schema_.columns()) columns.push_back(column.name());
  std::vector<std::string> header = run->synthetic.header;
  std::sort(columns.begin(), columns.end());
  std::sort(header.begin(), header.end());
  EXPECT_EQ(header, columns);
}

TEST(AuditShadowConfigTest, SuitsEachModesTraining) {
  const auto marginals = AuditShadowConfig(*ShadowPrivacy("marginals", 1, 1e-5), -1);
  ASSERT_TRUE(marginals.ok()) << marginals.status();
  EXPECT_EQ(marginals->privacy.mode(), v1::PrivacyConfig::marginals);
  EXPECT_LE(marginals->training.batch_size(), 500);  // the audit's default D
  EXPECT_GT(marginals->training.rounds(), SmallShadowConfig(50).training.rounds());
  const auto strict = AuditShadowConfig(*ShadowPrivacy("strict", 1, 1e-5), 7);
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_EQ(strict->training.rounds(), 7);
  EXPECT_EQ(strict->training.batch_size(), SmallShadowConfig(7).training.batch_size());
  EXPECT_FALSE(strict->training.has_marginal_weight());  // the daemons' default applies
  const auto none = AuditShadowConfig(*ShadowPrivacy("none", 0, 1e-5), -1);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->training.marginal_weight(), 1);  // as dpsgd and strict run it, exact
}

TEST_F(ShadowTrainingTest, TooFewRecordsForTheBatchAreRefused) {
  data_.rows.resize(options_.training.batch_size() - 1);
  const auto run = TrainShadowModel(schema_, options_, data_, kSeed);
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("batch size 64"), std::string::npos) << run.status();
}

TEST(ShadowPrivacyTest, RefusesModesAndBudgetsThatDoNotFit) {
  EXPECT_TRUE(ShadowPrivacy("none", 0, 1e-5).ok());
  const auto strict = ShadowPrivacy("strict", 1, 1e-5);
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_EQ(strict->epsilon(), 1);
  EXPECT_EQ(strict->delta(), 1e-5);
  EXPECT_TRUE(ShadowPrivacy("marginals", 1, 1e-5).ok());
  EXPECT_EQ(ShadowPrivacy("bogus", 1, 1e-5).status().code(), absl::StatusCode::kInvalidArgument);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    const auto status = ShadowPrivacy("dpsgd", bad, 1e-5).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("needs --epsilon"), std::string::npos) << status;
  }
  const auto none_with_budget = ShadowPrivacy("none", 1, 1e-5).status();
  EXPECT_EQ(none_with_budget.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none_with_budget.message().find("mode none"), std::string::npos) << none_with_budget;
}

}  // namespace
}  // namespace vfsynth
