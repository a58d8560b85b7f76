#include "common/base/file_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace vfsynth {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ReadableByOthersWarningTest, NamesAKeyThatGroupOrOthersMayRead) {
  const std::string path = ::testing::TempDir() + "/readable_by_others.key";
  ASSERT_TRUE(WritePrivateFile(path, "secret").ok());
  EXPECT_FALSE(ReadableByOthersWarning(path).has_value());
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  const auto warning = ReadableByOthersWarning(path);
  ASSERT_TRUE(warning.has_value());
  EXPECT_THAT(*warning, AllOf(HasSubstr(path), HasSubstr("mode 0644"), HasSubstr("chmod 600")));
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  EXPECT_TRUE(ReadableByOthersWarning(path).has_value());
  EXPECT_FALSE(ReadableByOthersWarning(path + ".absent").has_value());
}

// A writer killed between creating its temp file and the rename leaves the temp file;
// the next write of the same file removes it, never a live writer's.
TEST(WriteFileAtomicallyTest, RemovesTheTempFilesOfWritersKilledMidWrite) {
  const std::string dir = ::testing::TempDir() + "/atomic_leftovers";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const std::string path = dir + "/curator.ckpt";
  const std::string left = path + ".tmp." + std::to_string(dead);
  const std::string live = path + ".tmp." + std::to_string(getppid());
  const std::string other = dir + "/other.ckpt.tmp." + std::to_string(dead);
  for (const std::string& file : {left, live, other}) ASSERT_TRUE(WriteFileAtomically(file, "x").ok());

  ASSERT_TRUE(WriteFileAtomically(path, "state").ok());
  EXPECT_FALSE(std::filesystem::exists(left));
  EXPECT_TRUE(std::filesystem::exists(live));   // its writer is alive
  EXPECT_TRUE(std::filesystem::exists(other));  // another file's
}

}  // namespace
}  // namespace vfsynth
