#include "common/gan/reference_trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "common/config/config.h"
#include "common/data/schema.h"
#include "common/data/split.h"

namespace vfsynth {
namespace {

const std::string kSource = VFSYNTH_SOURCE_DIR;

class ReferenceTrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(::testing::TempDir() + "/reference_trainer_adult");
    auto split = SplitFiles(std::string(VFSYNTH_DATASETS_DIR) + "/adult.csv",
                            kSource + "/deploy/schemas/adult.schema.json",
                            kSource + "/deploy/parties/adult-3.json", *dir_, false);
    ASSERT_TRUE(split.ok()) << split.status();
  }

  static v1::LocalRunConfig Config(int rounds, uint64_t seed) {
    v1::LocalRunConfig config;
    for (const char* name : {"hospital", "insurer", "bank"}) {
      v1::PartyDataConfig* party = config.add_parties();
      party->set_name(name);
      party->set_data(*dir_ + "/" + name + ".csv");
      party->set_schema(*dir_ + "/" + name + ".schema.json");
    }
    config.mutable_training()->set_rounds(rounds);
    config.mutable_training()->set_seed(seed);
    config.mutable_training()->set_log_every(100);
    EXPECT_TRUE(ResolveLocalRunConfig("", &config).ok());
    return config;
  }

  static std::string* dir_;
};

std::string* ReferenceTrainerTest::dir_ = nullptr;

// Total variation distance between the category frequencies of two columns.
double Tvd(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::map<std::string, double> pa, pb;
  for (const auto& v : a) pa[v] += 1.0 / a.size();
  for (const auto& v : b) pb[v] += 1.0 / b.size();
  std::set<std::string> keys;
  for (const auto& [k, _] : pa) keys.insert(k);
  for (const auto& [k, _] : pb) keys.insert(k);
  double tvd = 0;
  for (const auto& k : keys) tvd += std::abs(pa[k] - pb[k]);
  return tvd / 2;
}

std::vector<std::string> Column(const CsvTable& table, const std::string& name) {
  const int index = table.ColumnIndex(name);
  std::vector<std::string> values;
  for (const auto& row : table.rows) values.push_back(row[index]);
  return values;
}

TEST_F(ReferenceTrainerTest, SameSeedsGiveIdenticalParameters) {
  auto a = ReferenceTrainer::Create(Config(2, 7));
  auto b = ReferenceTrainer::Create(Config(2, 7));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Train().ok());
  ASSERT_TRUE((*b)->Train().ok());
  const auto pa = (*a)->generator()->parameters();
  const auto pb = (*b)->generator()->parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i]));
  const auto fa = (*a)->parties()[1].feat->parameters();
  const auto fb = (*b)->parties()[1].feat->parameters();
  for (size_t i = 0; i < fa.size(); ++i) EXPECT_TRUE(torch::equal(fa[i], fb[i]));

  auto c = ReferenceTrainer::Create(Config(2, 8));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Train().ok());
  EXPECT_FALSE(torch::equal(pa.back(), (*c)->generator()->parameters().back()));
}

TEST_F(ReferenceTrainerTest, TrainingWritesValidTableCloserToRealMarginals) {
  auto real = ReadCsv(std::string(VFSYNTH_DATASETS_DIR) + "/adult.csv");
  auto schema = LoadSchema(kSource + "/deploy/schemas/adult.schema.json");
  ASSERT_TRUE(real.ok() && schema.ok());
  const int64_t rows = 4000;

  auto untrained = ReferenceTrainer::Create(Config(0, 3));
  ASSERT_TRUE(untrained.ok()) << untrained.status();
  auto before = (*untrained)->Synthesize(rows);
  ASSERT_TRUE(before.ok()) << before.status();

  auto trainer = ReferenceTrainer::Create(Config(300, 3));
  ASSERT_TRUE(trainer.ok());
  EXPECT_EQ((*trainer)->aligned_rows(), 32561);
  int progress_calls = 0;
  ASSERT_TRUE((*trainer)
                  ->Train([&](const RoundStats& s) {
                    ++progress_calls;
                    EXPECT_GT(s.rounds_per_second, 0);
                  })
                  .ok());
  EXPECT_EQ(progress_calls, 300);
  auto after = (*trainer)->Synthesize(rows);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->rows.size(), static_cast<size_t>(rows));

  for (const v1::Column& column : schema->columns()) {
    ASSERT_GE(after->ColumnIndex(column.name()), 0) << column.name();
    const std::vector<std::string> synthetic = Column(*after, column.name());
    if (column.type() == "categorical") {
      std::set<std::string> allowed(column.categories().begin(), column.categories().end());
      if (column.nullable()) allowed.insert("?");
      for (const auto& v : synthetic) ASSERT_TRUE(allowed.count(v)) << column.name() << "=" << v;
      const double tvd_before = Tvd(Column(*real, column.name()), Column(*before, column.name()));
      const double tvd_after = Tvd(Column(*real, column.name()), synthetic);
      EXPECT_LT(tvd_after, tvd_before) << column.name();
    } else {
      for (const auto& v : synthetic) {
        double x = 0;
        ASSERT_TRUE(absl::SimpleAtod(v, &x)) << v;
        EXPECT_GE(x, column.min());
        EXPECT_LE(x, column.max());
        EXPECT_EQ(x, std::round(x)) << column.name();  // Adult numerics are integers
      }
    }
  }
}

// output.label_temperature re-draws the label alone: the same z and Gumbel noise give
// every other column unchanged. A label column that cannot be sharpened is refused
// when the trainer is built, before any round.
TEST_F(ReferenceTrainerTest, LabelTemperatureChangesOnlyTheLabelColumn) {
  const int64_t rows = 2000;
  v1::LocalRunConfig plain = Config(0, 5);
  v1::LocalRunConfig sharpened = plain;
  sharpened.mutable_output()->set_label_column("class");
  sharpened.mutable_output()->set_label_temperature(0.2);
  auto a = ReferenceTrainer::Create(plain);
  auto b = ReferenceTrainer::Create(sharpened);
  ASSERT_TRUE(a.ok() && b.ok());
  auto table_a = (*a)->Synthesize(rows);
  auto table_b = (*b)->Synthesize(rows);
  ASSERT_TRUE(table_a.ok() && table_b.ok());
  const int label = table_a->ColumnIndex("class");
  ASSERT_GE(label, 0);
  int changed = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < table_a->header.size(); ++c) {
      if (static_cast<int>(c) == label) {
        changed += table_a->rows[r][c] != table_b->rows[r][c];
      } else {
        ASSERT_EQ(table_a->rows[r][c], table_b->rows[r][c]) << table_a->header[c] << " row " << r;
      }
    }
  }
  EXPECT_GT(changed, 0);

  for (const auto& [column, problem] : std::vector<std::pair<std::string, std::string>>{
           {"no-such-column", "in no party's schema"}, {"age", "not categorical"}}) {
    v1::LocalRunConfig config = sharpened;
    config.mutable_output()->set_label_column(column);
    auto trainer = ReferenceTrainer::Create(config);
    ASSERT_FALSE(trainer.ok()) << column;
    EXPECT_EQ(trainer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(trainer.status().message().find(column), std::string::npos) << trainer.status();
  }
}

TEST_F(ReferenceTrainerTest, RejectsBatchLargerThanData) {
  v1::LocalRunConfig config = Config(1, 1);
  config.mutable_training()->set_batch_size(100000);
  auto trainer = ReferenceTrainer::Create(config);
  ASSERT_FALSE(trainer.ok());
  EXPECT_NE(trainer.status().message().find("batch_size"), std::string::npos);
}

}  // namespace
}  // namespace vfsynth
