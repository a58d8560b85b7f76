// LabelPairExchange: who holds the label, what each call accepts, that a release is
// never replaced, and the target it builds.
#include "server/core/label_pair_exchange.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/gan/label_pairs.h"
#include "common/nn/wire_tensor.h"
#include "tests/unit/data/encoder_from_json.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

class LabelPairExchangeTest : public ::testing::Test {
 protected:
  std::unique_ptr<LabelPairExchange> Make(const std::string& column) {
    auto exchange = LabelPairExchange::Create(column, {&a_, &b_, &c_}, {"a", "b", "c"}, kRows);
    EXPECT_TRUE(exchange.ok()) << exchange.status();
    return exchange.ok() ? std::move(*exchange) : nullptr;
  }
  static v1::ShareLabelsRequest Labels(std::vector<int> labels, double epsilon = 1.0) {
    v1::ShareLabelsRequest request;
    for (int label : labels) request.add_labels(label);
    request.set_epsilon(epsilon);
    return request;
  }
  static v1::LabelPairsRequest Pairs(const std::vector<int32_t>& labels, int64_t cells,
                                     float value = 1) {
    v1::LabelPairsRequest request;
    request.set_labels_sha256(LabelsDigest(labels));
    ToWire(torch::full({cells}, value), request.mutable_counts());
    return request;
  }

  static constexpr int64_t kRows = 4;
  // a: numeric n; b: the label y (2 categories) and z (3); c: a 2-way x.
  TableEncoder a_ = EncoderFromJson(R"({"columns":[{"name":"n","type":"continuous","min":0,"max":1},
      {"name":"m","type":"categorical","categories":["s","t"]}]})");
  TableEncoder b_ =
      EncoderFromJson(R"({"columns":[{"name":"y","type":"categorical","categories":["lo","hi"]},
      {"name":"z","type":"categorical","categories":["p","q","r"]}]})");
  TableEncoder c_ =
      EncoderFromJson(R"({"columns":[{"name":"x","type":"categorical","categories":["u","v"]},
      {"name":"n","type":"continuous","min":0,"max":1}]})");
};

TEST_F(LabelPairExchangeTest, FindsTheOneHolderOrSaysWhyNot) {
  auto exchange = Make("y");
  ASSERT_NE(exchange, nullptr);
  EXPECT_EQ(exchange->holder(), 1);
  auto missing = LabelPairExchange::Create("w", {&a_, &b_, &c_}, {"a", "b", "c"}, kRows);
  EXPECT_THAT(missing.status().message(), HasSubstr("in no party's schema"));
  auto numeric = LabelPairExchange::Create("n", {&a_, &b_, &c_}, {"a", "b", "c"}, kRows);
  EXPECT_THAT(numeric.status().message(), HasSubstr("not categorical"));
  TableEncoder scalars =
      EncoderFromJson(R"({"columns":[{"name":"n","type":"continuous","min":0,"max":1}]})");
  auto alone = LabelPairExchange::Create("y", {&scalars, &b_}, {"a", "b"}, kRows);
  EXPECT_THAT(alone.status().message(),
              HasSubstr("no other party has a categorical or binned column"));
  TableEncoder twin = EncoderFromJson(
      R"({"columns":[{"name":"y","type":"categorical","categories":["lo","hi"]}]})");
  auto twice = LabelPairExchange::Create("y", {&a_, &b_, &twin}, {"a", "b", "c"}, kRows);
  EXPECT_THAT(twice.status().message(), HasSubstr("held by both 'b' and 'c'"));
}

TEST_F(LabelPairExchangeTest, ChecksEveryCallAndNeverReplacesARelease) {
  auto exchange = Make("y");
  ASSERT_NE(exchange, nullptr);
  const absl::Time soon = absl::Now() + absl::Milliseconds(50);
  // Before the holder's labels, the others wait and time out.
  EXPECT_EQ(exchange->ShareLabels(0, v1::ShareLabelsRequest(), soon).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(exchange->ShareLabels(1, Labels({0, 1, 1}), soon).ok());  // 3 labels for 4 records
  EXPECT_FALSE(exchange->ShareLabels(1, Labels({0, 1, 2, 0}), soon).ok());  // 2 is not a category
  EXPECT_FALSE(
      exchange->ShareLabels(1, Labels({0, 1, 1, 0}, 0.0), soon).ok());      // ε 0: not a release
  EXPECT_FALSE(exchange->ShareLabels(0, Labels({0, 1, 1, 0}), soon).ok());  // not the holder
  ASSERT_TRUE(exchange->ShareLabels(1, Labels({0, 1, 1, 0}), soon).ok());
  EXPECT_TRUE(exchange->ShareLabels(1, Labels({0, 1, 1, 0}), soon).ok());  // the same again
  EXPECT_EQ(exchange->ShareLabels(1, Labels({1, 1, 1, 0}), soon).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto labels = exchange->ShareLabels(2, v1::ShareLabelsRequest(), soon);
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(labels->labels_size(), 4);
  EXPECT_EQ(labels->categories(), 2);

  const std::vector<int32_t> released = {0, 1, 1, 0};
  EXPECT_FALSE(exchange->ReleasePairs(1, Pairs(released, 4)).ok());  // the holder releases no pairs
  EXPECT_FALSE(exchange->ReleasePairs(0, Pairs(released, 5)).ok());  // a's m: 2 x 2 cells
  EXPECT_EQ(exchange->ReleasePairs(0, Pairs({1, 1, 1, 1}, 4)).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(exchange->ReleasePairs(0, Pairs(released, 4)).ok());
  EXPECT_TRUE(exchange->ReleasePairs(0, Pairs(released, 4)).ok());
  EXPECT_EQ(exchange->ReleasePairs(0, Pairs(released, 4, 2)).code(),
            absl::StatusCode::kFailedPrecondition);
  // c has not released: the target waits and names it.
  auto waiting = exchange->AwaitTarget(absl::Now() + absl::Milliseconds(50));
  EXPECT_THAT(waiting.status().message(), HasSubstr("from c"));
  ASSERT_TRUE(exchange->ReleasePairs(2, Pairs(released, 4)).ok());
  auto target = exchange->AwaitTarget(absl::Now());
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->pairs(), 2);  // y x m, y x x
}

TEST_F(LabelPairExchangeTest, CancelEndsTheWaits) {
  auto exchange = Make("y");
  ASSERT_NE(exchange, nullptr);
  exchange->Cancel(absl::CancelledError("shutting down"));
  EXPECT_EQ(
      exchange->ShareLabels(0, v1::ShareLabelsRequest(), absl::InfiniteFuture()).status().code(),
      absl::StatusCode::kCancelled);
  EXPECT_EQ(exchange->AwaitTarget(absl::InfiniteFuture()).status().code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace vfsynth
