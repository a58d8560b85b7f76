// WriteFileAtomically when fsync fails: linked with -Wl,--wrap=fsync, so the file
// layer's fsync calls come here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "common/base/file_io.h"

namespace {
bool fail_fsync = false;
}  // namespace

extern "C" int __real_fsync(int fd);
extern "C" int __wrap_fsync(int fd) {
  if (!fail_fsync) return __real_fsync(fd);
  errno = EIO;
  return -1;
}

namespace vfsynth {
namespace {

using ::testing::HasSubstr;

int OpenDescriptors() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    ++count;
  return count;
}

TEST(WriteFileAtomicallyTest, AFailedFsyncStillClosesTheFileAndLeavesNothing) {
  const std::string dir = ::testing::TempDir() + "/fsync_failure";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(MakeDirectories(dir).ok());
  const int before = OpenDescriptors();
  fail_fsync = true;
  for (int i = 0; i < 3; ++i) {
    const absl::Status status = WriteFileAtomically(dir + "/file", "contents");
    EXPECT_THAT(status.message(), HasSubstr("cannot flush"));
  }
  fail_fsync = false;
  EXPECT_EQ(OpenDescriptors(), before);
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // no temp file, no target
  EXPECT_TRUE(WriteFileAtomically(dir + "/file", "contents").ok());
}

}  // namespace
}  // namespace vfsynth
