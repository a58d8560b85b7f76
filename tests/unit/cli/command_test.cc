#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <new>

#include "client/cli/command_registry.h"

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

Command CommandRunning(std::function<absl::Status()> body) {
  return Command{"test", [body](const std::vector<std::string>&) { return body(); }, {}};
}

TEST(RunCommand, PassesTheCommandsOwnResultThrough) {
  const absl::Status ok = RunCommand("test", CommandRunning([] { return absl::OkStatus(); }), {});
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ExitCode(ok), 0);
  const absl::Status bad = RunCommand(
      "test", CommandRunning([] { return absl::InvalidArgumentError("--input is required"); }), {});
  EXPECT_EQ(bad.message(), "--input is required");
  EXPECT_EQ(ExitCode(bad), 2);
  EXPECT_EQ(ExitCode(absl::NotFoundError("no such file")), 1);
}

TEST(RunCommand, TurnsALibTorchErrorIntoAnErrorNamingTheCommand) {
  const absl::Status status = RunCommand("train-local", CommandRunning([] {
                                           torch::Tensor two = torch::zeros({2});
                                           two.view({3});  // throws c10::Error: shape mismatch
                                           return absl::OkStatus();
                                         }),
                                         {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("train-local: "));
  EXPECT_THAT(status.message(), HasSubstr("shape '[3]' is invalid"));
  EXPECT_EQ(ExitCode(status), 1);
}

TEST(RunCommand, TurnsAFailedAllocationIntoAnError) {
  const absl::Status status = RunCommand(
      "synthesize", CommandRunning([]() -> absl::Status { throw std::bad_alloc(); }), {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("synthesize: "));
}

}  // namespace
}  // namespace vfsynth
