#include "common/base/file_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

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

}  // namespace
}  // namespace vfsynth
