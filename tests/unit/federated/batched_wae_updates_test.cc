// Many users' local updates trained as one batch are each user's own LocalWaeUpdate:
// the same draws from its generator, the same steps, equal up to float rounding, in
// either local optimiser, whatever the users' row counts and the batch's size.
#include "common/federated/batched_wae_updates.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <vector>

namespace vfsynth {
namespace {

constexpr WaeOptions kArchitecture{/*input_dim=*/10, /*hidden=*/12, /*latent=*/3};

torch::Generator GeneratorOf(int64_t user) {
  return torch::make_generator<torch::CPUGeneratorImpl>(static_cast<uint64_t>(1000 + user));
}

// Users of 1, 2, 3 and 45 rows (45 > the batch of 32: one full step an epoch, the rest
// left out as LocalWaeUpdate leaves it), mixed so that groups are not contiguous.
std::vector<torch::Tensor> MixedUsers() {
  torch::manual_seed(17);
  std::vector<torch::Tensor> users;
  for (const int64_t n : {1, 2, 45, 1, 3, 2, 1, 45, 3, 1}) {
    const torch::Tensor block = torch::one_hot(torch::randint(5, {n}), 5).to(torch::kFloat32);
    users.push_back(torch::cat({block, torch::rand({n, 5})}, 1));
  }
  return users;
}

void ExpectEachUsersOwnUpdate(const LocalUpdateOptions& options, int64_t users_per_batch) {
  torch::manual_seed(4);
  Wae model(kArchitecture);
  const torch::Tensor global = FlatParameters(*model);
  const std::vector<torch::Tensor> users = MixedUsers();
  BatchedUpdateInputs inputs;
  for (size_t u = 0; u < users.size(); ++u) {
    inputs.rows.push_back(&users[u]);
    inputs.generators.push_back(GeneratorOf(static_cast<int64_t>(u)));
  }
  std::vector<torch::Tensor> batched(users.size());
  int calls = 0;
  const absl::Status status = LocalWaeUpdates(
      kArchitecture, global, inputs, options, users_per_batch,
      [&](absl::Span<const int64_t> batch, const torch::Tensor& updates) {
        ++calls;
        EXPECT_LE(static_cast<int64_t>(batch.size()), users_per_batch);
        EXPECT_EQ(updates.size(0), static_cast<int64_t>(batch.size()));
        for (size_t i = 0; i < batch.size(); ++i) {
          EXPECT_EQ(users[batch[0]].size(0), users[batch[i]].size(0)) << "one row count a batch";
          EXPECT_FALSE(batched[batch[i]].defined()) << "user " << batch[i] << " twice";
          batched[batch[i]] = updates[static_cast<int64_t>(i)].clone();
        }
        return absl::OkStatus();
      });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_GE(calls, 4);  // four row counts
  EXPECT_TRUE(torch::equal(global, FlatParameters(*model))) << "the broadcast model changed";
  for (size_t u = 0; u < users.size(); ++u) {
    torch::Generator own = GeneratorOf(static_cast<int64_t>(u));
    auto expected = LocalWaeUpdate(kArchitecture, global, users[u], options, own);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_TRUE(batched[u].defined()) << "user " << u << " has no update";
    const double scale = expected->abs().max().item<double>();
    ASSERT_GT(scale, 0);
    EXPECT_LT((batched[u] - *expected).abs().max().item<double>(), 1e-4 * scale) << "user " << u;
  }
}

TEST(BatchedWaeUpdatesTest, EachUsersAdamUpdateIsItsOwnLocalUpdate) {
  ExpectEachUsersOwnUpdate(LocalUpdateOptions{/*epochs=*/4, 1e-3, 32}, /*users_per_batch=*/2);
}

TEST(BatchedWaeUpdatesTest, AUserTrainedAloneIsItsOwnLocalUpdate) {
  ExpectEachUsersOwnUpdate(LocalUpdateOptions{/*epochs=*/3, 1e-3, 32}, /*users_per_batch=*/1);
}

TEST(BatchedWaeUpdatesTest, EachUsersSgdUpdateIsItsOwnLocalUpdate) {
  ExpectEachUsersOwnUpdate(
      LocalUpdateOptions{/*epochs=*/2, 0.1, 32, LocalUpdateOptions::Optimizer::kSgd},
      /*users_per_batch=*/64);
}

TEST(BatchedWaeUpdatesTest, BadInputsAreRefusedBeforeAnyUserTrains) {
  Wae model(kArchitecture);
  const torch::Tensor global = FlatParameters(*model);
  const torch::Tensor wrong = torch::zeros({2, 7});
  BatchedUpdateInputs inputs;
  inputs.rows = {&wrong};
  inputs.generators = {GeneratorOf(0)};
  bool called = false;
  auto consume = [&](absl::Span<const int64_t>, const torch::Tensor&) {
    called = true;
    return absl::OkStatus();
  };
  EXPECT_EQ(LocalWaeUpdates(kArchitecture, global, inputs, {}, 8, consume).code(),
            absl::StatusCode::kInvalidArgument);
  const torch::Tensor empty = torch::zeros({0, 10});
  inputs.rows = {&empty};
  EXPECT_EQ(LocalWaeUpdates(kArchitecture, global, inputs, {}, 8, consume).code(),
            absl::StatusCode::kInvalidArgument);
  const torch::Tensor good = torch::zeros({1, 10});
  inputs.rows = {&good};
  EXPECT_EQ(LocalWaeUpdates(kArchitecture, global.slice(0, 1), inputs, {}, 8, consume).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LocalWaeUpdates(kArchitecture, global, inputs, {}, 0, consume).code(),
            absl::StatusCode::kInvalidArgument);
  inputs.generators.clear();
  EXPECT_EQ(LocalWaeUpdates(kArchitecture, global, inputs, {}, 8, consume).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(called);
}

TEST(BatchedWaeUpdatesTest, AConsumersErrorStopsTheComputation) {
  Wae model(kArchitecture);
  const std::vector<torch::Tensor> users = MixedUsers();
  BatchedUpdateInputs inputs;
  for (size_t u = 0; u < users.size(); ++u) {
    inputs.rows.push_back(&users[u]);
    inputs.generators.push_back(GeneratorOf(static_cast<int64_t>(u)));
  }
  int calls = 0;
  const absl::Status status = LocalWaeUpdates(
      kArchitecture, FlatParameters(*model), inputs, {}, 1,
      [&](absl::Span<const int64_t>, const torch::Tensor&) {
        ++calls;
        return absl::DataLossError("disk full");
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace vfsynth
