// A party's label-pair releases: drawn once per run and kept, sent again byte for byte.
#include "client/core/label_pair_release.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/gan/label_pairs.h"

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class LabelPairReleaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/label_pair_release_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // 500 rows: a 2-way label at columns 0-1 and a 3-way block at columns 2-4.
    torch::manual_seed(5);
    const torch::Tensor label = torch::randint(2, {500}, torch::kLong);
    const torch::Tensor other = torch::randint(3, {500}, torch::kLong);
    table_ =
        torch::cat({torch::one_hot(label, 2), torch::one_hot(other, 3)}, 1).to(torch::kFloat32);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  torch::Tensor table_;
  const OutputBlock label_{BlockKind::kSoftmax, 0, 2};
  const std::vector<OutputBlock> blocks_ = {{BlockKind::kSoftmax, 2, 3}};
};

TEST_F(LabelPairReleaseTest, HolderDrawsOncePerRunAndKeepsIt) {
  const std::string path = dir_ + "/labels.release";
  auto first = HolderLabelRelease(path, "run", "bank", table_, label_, 1.5);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->labels_size(), 500);
  EXPECT_EQ(first->run_id(), "run");
  auto again = HolderLabelRelease(path, "run", "bank", table_, label_, 1.5);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->SerializeAsString(), first->SerializeAsString());
  // Other settings for the same run: refused rather than released anew.
  EXPECT_EQ(HolderLabelRelease(path, "run", "bank", table_, label_, 2.0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Another run draws its own.
  auto other_run = HolderLabelRelease(path, "run-2", "bank", table_, label_, 1.5);
  ASSERT_TRUE(other_run.ok()) << other_run.status();
  EXPECT_NE(other_run->SerializeAsString(), first->SerializeAsString());
}

TEST_F(LabelPairReleaseTest, AKeptReleaseOfAnotherFormatVersionIsRefusedNotDrawnAgain) {
  const std::string path = dir_ + "/labels.release";
  ASSERT_TRUE(HolderLabelRelease(path, "run", "bank", table_, label_, 1.5).ok());
  std::string file = ReadFile(path).value();
  ASSERT_EQ(file.rfind("VFSYNTH-RELEASE 1\n", 0), 0u);
  file.replace(0, std::string("VFSYNTH-RELEASE 1").size(), "VFSYNTH-RELEASE 9");
  ASSERT_TRUE(WriteFileAtomically(path, file).ok());
  const absl::Status status = HolderLabelRelease(path, "run", "bank", table_, label_, 1.5).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(path), HasSubstr("format version 9"), HasSubstr("reads version 1")));
  EXPECT_EQ(ReadFile(path).value(), file);  // kept as it was
}

TEST_F(LabelPairReleaseTest, TablesAreKeptForTheLabelsTheyCounted) {
  const std::string path = dir_ + "/label_pairs.release";
  v1::ShareLabelsResponse labels;
  labels.set_categories(2);
  for (int r = 0; r < 500; ++r) labels.add_labels(r % 2);
  auto first = LabelPairRelease(path, "run", "hospital", labels, table_, blocks_, 3.0);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->counts().shape(0), 6);
  EXPECT_EQ(first->labels_sha256(),
            LabelsDigest(std::vector<int32_t>(labels.labels().begin(), labels.labels().end())));
  auto again = LabelPairRelease(path, "run", "hospital", labels, table_, blocks_, 3.0);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->SerializeAsString(), first->SerializeAsString());
  labels.set_labels(0, 1);
  EXPECT_THAT(
      LabelPairRelease(path, "run", "hospital", labels, table_, blocks_, 3.0).status().message(),
      HasSubstr("labels changed"));
  labels.add_labels(0);
  EXPECT_EQ(LabelPairRelease(path, "run", "hospital", labels, table_, blocks_, 3.0).status().code(),
            absl::StatusCode::kInvalidArgument);  // 501 labels for 500 records
}

}  // namespace
}  // namespace vfsynth
