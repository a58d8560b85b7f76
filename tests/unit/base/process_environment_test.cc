#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/cli.h"
#include "gtest/gtest.h"

namespace vfsynth {
namespace {

// Runs the probe under `env` (an env(1) argument list) and returns what it printed.
std::string RunProbe(const std::string& env) {
  const std::string command =
      absl::StrCat("env ", env, " ", VFSYNTH_BIN_DIR, "/process_environment_probe");
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return "";
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) out += buffer;
  EXPECT_EQ(::pclose(pipe), 0) << command;
  return out;
}

std::string Field(const std::string& out, const std::string& key) {
  const size_t start = out.find(key + "=");
  if (start == std::string::npos) return "";
  const size_t end = out.find('\n', start);
  return out.substr(start + key.size() + 1, end - start - key.size() - 1);
}

TEST(ProcessEnvironmentTest, SetsPassiveWaitWhenUnset) {
  EXPECT_EQ(Field(RunProbe("-u OMP_WAIT_POLICY"), "OMP_WAIT_POLICY"), "PASSIVE");
}

TEST(ProcessEnvironmentTest, KeepsTheUsersWaitPolicy) {
  EXPECT_EQ(Field(RunProbe("OMP_WAIT_POLICY=ACTIVE"), "OMP_WAIT_POLICY"), "ACTIVE");
}

TEST(ProcessEnvironmentTest, ReportsTheBlasKernelsInUse) {
  const std::string core = Field(RunProbe("-u OMP_WAIT_POLICY OPENBLAS_CORETYPE=Haswell"), "core");
  if (core == "not OpenBLAS") GTEST_SKIP() << "not available here: OpenBLAS as LibTorch's BLAS";
  EXPECT_EQ(core, "Haswell");
  // Every x86-64 CPU runs Prescott's kernels; a name that ignored the pin would not change.
  EXPECT_EQ(Field(RunProbe("OPENBLAS_CORETYPE=Prescott"), "core"), "Prescott");
}

TEST(ProcessEnvironmentTest, WarnsOnlyWhenAPinHidesAvx512) {
  const std::string pinned = RunProbe("OPENBLAS_CORETYPE=Haswell");
  if (Field(pinned, "core") == "not OpenBLAS")
    GTEST_SKIP() << "not available here: OpenBLAS as LibTorch's BLAS";
  if (CpuHasAvx512()) {
    EXPECT_NE(Field(pinned, "warning").find("OPENBLAS_CORETYPE=Haswell"), std::string::npos)
        << pinned;
  } else {
    EXPECT_EQ(Field(pinned, "warning"), "") << pinned;
  }
  // OpenBLAS's own choice is never second-guessed.
  EXPECT_EQ(Field(RunProbe("-u OPENBLAS_CORETYPE"), "warning"), "");
}

}  // namespace
}  // namespace vfsynth
