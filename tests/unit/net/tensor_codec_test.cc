#include "common/protocol/tensor_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr int64_t kNoLimit = int64_t{1} << 30;

v1::Tensor Encode(const std::vector<float>& values, std::vector<int64_t> shape) {
  v1::Tensor tensor;
  EncodeTensor(values.data(), shape, &tensor);
  return tensor;
}

TEST(TensorCodecTest, RoundTripKeepsShapeAndValuesBitExact) {
  const std::vector<float> values = {0.0f, -1.5f, 3.25f, 1e-30f, -0.0f, 65504.0f};
  const v1::Tensor tensor = Encode(values, {2, 3});
  EXPECT_THAT(tensor.shape(), ElementsAre(2, 3));
  EXPECT_EQ(tensor.dtype(), v1::DTYPE_FLOAT32);
  EXPECT_EQ(tensor.data().size(), values.size() * sizeof(float));
  ASSERT_TRUE(ValidateTensor(tensor, {2, 3}, "t", kNoLimit).ok());
  std::vector<float> decoded(values.size(), 42.0f);
  DecodeTensorInto(tensor, decoded.data());
  EXPECT_EQ(std::memcmp(decoded.data(), values.data(), values.size() * sizeof(float)), 0);
  EXPECT_THAT(decoded, ElementsAreArray(values));
}

TEST(TensorCodecTest, EncodeReplacesPreviousContents) {
  v1::Tensor tensor = Encode({1, 2, 3, 4}, {2, 2});
  const std::vector<float> one = {7.0f};
  EncodeTensor(one.data(), std::vector<int64_t>{1, 1}, &tensor);
  EXPECT_THAT(tensor.shape(), ElementsAre(1, 1));
  EXPECT_EQ(tensor.data().size(), sizeof(float));
}

TEST(TensorCodecTest, WrongDtypeIsNamed) {
  v1::Tensor tensor = Encode({1, 2}, {1, 2});
  tensor.set_dtype(v1::DTYPE_UNSPECIFIED);
  const absl::Status status = ValidateTensor(tensor, {1, 2}, "features.h_real", kNoLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("features.h_real"), HasSubstr("dtype"),
                                      HasSubstr("DTYPE_UNSPECIFIED")));
}

TEST(TensorCodecTest, WrongShapeNamesBothShapes) {
  const v1::Tensor tensor = Encode(std::vector<float>(8, 0.5f), {4, 2});
  const absl::Status status = ValidateTensor(tensor, {4, 3}, "features.h_fake", kNoLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("features.h_fake"),
                                      HasSubstr("expected shape [4, 3]"), HasSubstr("got [4, 2]")));
}

TEST(TensorCodecTest, WrongRankIsAShapeError) {
  // Same element count, different rank: still not what the round expects.
  const v1::Tensor tensor = Encode(std::vector<float>(6, 0.0f), {6});
  const absl::Status status = ValidateTensor(tensor, {2, 3}, "g", kNoLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("[2, 3]"), HasSubstr("got [6]")));
}

TEST(TensorCodecTest, DataLengthMustMatchShape) {
  v1::Tensor tensor = Encode(std::vector<float>(6, 1.0f), {2, 3});
  tensor.mutable_data()->resize(5 * sizeof(float));
  absl::Status status = ValidateTensor(tensor, {2, 3}, "slice", kNoLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("slice"), HasSubstr("24 bytes"), HasSubstr("got 20")));

  tensor.mutable_data()->append(std::string(7, '\0'));  // 27 bytes: not even whole floats
  status = ValidateTensor(tensor, {2, 3}, "slice", kNoLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("got 27"));
}

TEST(TensorCodecTest, NonFiniteValuesNameTheElement) {
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity()}) {
    std::vector<float> values(6, 0.25f);
    values[4] = bad;
    const absl::Status status = ValidateTensor(Encode(values, {2, 3}), {2, 3}, "grad", kNoLimit);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(),
                AllOf(HasSubstr("grad"), HasSubstr("non-finite"), HasSubstr("element 4")))
        << bad;
  }
}

TEST(TensorCodecTest, OversizeIsResourceExhausted) {
  const v1::Tensor tensor = Encode(std::vector<float>(16, 1.0f), {4, 4});
  EXPECT_TRUE(ValidateTensor(tensor, {4, 4}, "big", 64).ok());  // exactly at the limit
  const absl::Status status = ValidateTensor(tensor, {4, 4}, "big", 63);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("big"), HasSubstr("64 bytes"), HasSubstr("63")));
}

TEST(TensorCodecTest, EmptyProtoIsRejectedNotCrashed) {
  const absl::Status status = ValidateTensor(v1::Tensor(), {2, 3}, "missing", kNoLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("missing"));
}

TEST(TensorCodecTest, ElementCountMultipliesDimensions) {
  EXPECT_EQ(ElementCount(std::vector<int64_t>{}), 1);
  EXPECT_EQ(ElementCount(std::vector<int64_t>{3, 0}), 0);
  EXPECT_EQ(ElementCount(std::vector<int64_t>{256, 64}), 16384);
}

}  // namespace
}  // namespace vfsynth
