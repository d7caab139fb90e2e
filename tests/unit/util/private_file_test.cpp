// util::write_private_file and read_private_file: the state file is
// replaced whole, readable only by its owner, and not trusted when others
// could have written it.
#include "util/private_file.hpp"

#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace keyshim::util {
namespace {

TEST(PrivateFile, IsWrittenWithMode0600IntoNewDirectoriesOfMode0700) {
  test::TempDir dir;
  const std::string path = dir.path() + "/a/b/state.json";
  std::string error;
  ASSERT_TRUE(write_private_file(path, "first", error)) << error;
  ASSERT_TRUE(write_private_file(path, "second", error)) << error;
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir.path() + "/a/b").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  EXPECT_EQ(read_private_file(path, 1024, error).value_or(""), "second");
  EXPECT_EQ(error, "");
}

TEST(PrivateFile, AMissingFileReadsAsNothingWithoutAnError) {
  test::TempDir dir;
  std::string error = "stale";
  EXPECT_FALSE(read_private_file(dir.path() + "/none.json", 1024, error));
  EXPECT_EQ(error, "");
}

TEST(PrivateFile, AFileOthersMayWriteOrTooLargeIsRefusedWithTheReason) {
  test::TempDir dir;
  std::string path = dir.write("state.json", "0123456789", 0600);
  std::string error;
  EXPECT_FALSE(read_private_file(path, 4, error));
  EXPECT_NE(error.find("larger than 4 bytes"), std::string::npos) << error;
  ::chmod(path.c_str(), 0620);
  EXPECT_FALSE(read_private_file(path, 1024, error));
  EXPECT_NE(error.find("writable by other users"), std::string::npos) << error;
}

TEST(PrivateFile, AWriteThatCannotHappenLeavesTheOldFileAndSaysWhy) {
  test::TempDir dir;
  std::string path = dir.write("state.json", "old", 0600);
  std::string blocker = dir.write("file", "", 0600);
  std::string error;
  EXPECT_FALSE(write_private_file(blocker + "/state.json", "new", error));
  EXPECT_NE(error.find("cannot create"), std::string::npos) << error;
  EXPECT_EQ(read_private_file(path, 1024, error).value_or(""), "old");
}

} // namespace
} // namespace keyshim::util
