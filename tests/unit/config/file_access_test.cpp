#include "config/file_access.hpp"
#include "config/loader.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

using namespace keyshim::config;
using keyshim::test::TempDir;

namespace {

constexpr const char* k_pool = "[[keys]]\nkey = \"sk-file-test-1\"\n";

std::string make_dir(const TempDir& temp, const std::string& name, mode_t mode) {
  std::string dir = temp.path() + "/" + name;
  ::mkdir(dir.c_str(), 0700);
  ::chmod(dir.c_str(), mode);
  return dir;
}

} // namespace

TEST(PoolFilePermissions, PrivateFileIsRead) {
  TempDir temp;
  FileRead read = read_private_file(temp.write("keys.toml", k_pool, 0600));
  ASSERT_TRUE(read.text) << read.problem;
  EXPECT_EQ(*read.text, k_pool);
}

TEST(PoolFilePermissions, WorldReadableFileIsRefusedWithTheChmodFix) {
  TempDir temp;
  std::string path = temp.write("keys.toml", k_pool, 0644);
  FileRead read = read_private_file(path);
  EXPECT_FALSE(read.text);
  EXPECT_EQ(read.problem, "permissions 0644 are too open: other users can read your API keys. "
                          "Run: chmod 600 " +
                              path);
}

TEST(PoolFilePermissions, GroupReadableFileIsRefused) {
  TempDir temp;
  FileRead read = read_private_file(temp.write("keys.toml", k_pool, 0640));
  EXPECT_FALSE(read.text);
  EXPECT_NE(read.problem.find("permissions 0640 are too open"), std::string::npos);
}

TEST(PoolFilePermissions, GroupWritableFileIsRefusedEvenWhenNotReadable) {
  TempDir temp;
  FileRead read = read_private_file(temp.write("keys.toml", k_pool, 0620));
  EXPECT_FALSE(read.text);
  EXPECT_NE(read.problem.find("permissions 0620 are too open: other users can change or run it"),
            std::string::npos);
}

TEST(PoolFilePermissions, OwnerOnlyModesOtherThan0600AreAccepted) {
  TempDir temp;
  EXPECT_TRUE(read_private_file(temp.write("a.toml", k_pool, 0400)).text);
  EXPECT_TRUE(read_private_file(temp.write("b.toml", k_pool, 0700)).text);
}

TEST(PoolFilePermissions, FileOwnedBySomeoneElseIsRefused) {
  EXPECT_EQ(file_permission_problem("/p/keys.toml", 0100600, 1000, 1000), "");
  std::string problem = file_permission_problem("/p/keys.toml", 0100600, 1001, 1000);
  EXPECT_EQ(problem, "owned by uid 1001, but keyshim runs as uid 1000: another user can change "
                     "your keys. Run keyshim as its owner, or: chown 1000 /p/keys.toml");
}

TEST(PoolFilePermissions, FileOwnedBySomeoneElseIsRefusedOnDisk) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to give a file away";
  }
  TempDir temp;
  std::string path = temp.write("keys.toml", k_pool, 0600);
  ASSERT_EQ(::chown(path.c_str(), 1, 1), 0);
  FileRead read = read_private_file(path);
  EXPECT_FALSE(read.text);
  EXPECT_NE(read.problem.find("owned by uid 1, but keyshim runs as uid 0"), std::string::npos);
}

TEST(PoolFilePermissions, DirectoryWritableByOthersIsRefusedWithTheFix) {
  TempDir temp;
  std::string dir = make_dir(temp, "open", 0777);
  std::string path = dir + "/keys.toml";
  temp.write("open/keys.toml", k_pool, 0600);
  FileRead read = read_private_file(path);
  EXPECT_FALSE(read.text);
  EXPECT_EQ(read.problem, "its directory " + dir +
                              " is writable by other users (mode 0777): they "
                              "could replace your pool file. Run: chmod go-w " +
                              dir);
}

TEST(PoolFilePermissions, DirectoryWritableByGroupIsRefused) {
  TempDir temp;
  make_dir(temp, "group", 0770);
  FileRead read = read_private_file(temp.write("group/keys.toml", k_pool, 0600));
  EXPECT_NE(read.problem.find("(mode 0770)"), std::string::npos);
}

TEST(PoolFilePermissions, StickyDirectoryLikeTmpIsAccepted) {
  TempDir temp;
  make_dir(temp, "sticky", 01777);
  EXPECT_TRUE(read_private_file(temp.write("sticky/keys.toml", k_pool, 0600)).text);
}

TEST(PoolFilePermissions, ReadableDirectoryIsAccepted) {
  TempDir temp;
  make_dir(temp, "plain", 0755);
  EXPECT_TRUE(read_private_file(temp.write("plain/keys.toml", k_pool, 0600)).text);
}

TEST(PoolFilePermissions, MissingFileSuggestsInit) {
  TempDir temp;
  std::string path = temp.path() + "/nope.toml";
  FileRead read = read_private_file(path);
  EXPECT_FALSE(read.text);
  EXPECT_EQ(read.problem, "no such file. Create a starter one with: keyshim init -c " + path);
}

TEST(PoolFilePermissions, DirectoryIsNotARegularFile) {
  TempDir temp;
  FileRead read = read_private_file(temp.path());
  EXPECT_FALSE(read.text);
  EXPECT_NE(read.problem.find("not a regular file"), std::string::npos);
}

TEST(PoolFilePermissions, FifoIsRefusedWithoutBlocking) {
  TempDir temp;
  std::string path = temp.path() + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  FileRead read = read_private_file(path);
  EXPECT_NE(read.problem.find("not a regular file"), std::string::npos);
}

TEST(PoolFilePermissions, SymlinkIsCheckedThroughToItsTarget) {
  TempDir temp;
  std::string target = temp.write("real.toml", k_pool, 0644);
  std::string link = temp.path() + "/keys.toml";
  std::filesystem::create_symlink(target, link);
  EXPECT_NE(read_private_file(link).problem.find("permissions 0644"), std::string::npos);
  ::chmod(target.c_str(), 0600);
  EXPECT_TRUE(read_private_file(link).text);
}

TEST(PoolFilePermissions, HugeFileIsRefused) {
  TempDir temp;
  FileRead read = read_private_file(temp.write("big.toml", std::string(2 * 1024 * 1024, '#'), 0600));
  EXPECT_NE(read.problem.find("larger than 1 MiB"), std::string::npos);
}

TEST(LoadPoolFile, TooOpenFileIsNotParsedAndReportsOneProblemNamingThePath) {
  TempDir temp;
  std::string path = temp.write("keys.toml", "this is = = not toml", 0644);
  LoadResult result = load_pool_file(path);
  ASSERT_EQ(result.problems.size(), 1u);
  EXPECT_EQ(result.problems[0].file, path);
  EXPECT_EQ(result.problems[0].line, 0);
  EXPECT_EQ(result.problems[0].text().rfind(path + ": permissions 0644 are too open", 0), 0u);
}

TEST(LoadPoolFile, PrivateFileLoads) {
  TempDir temp;
  LoadResult result = load_pool_file(temp.write("keys.toml", k_pool, 0600));
  ASSERT_TRUE(result.ok()) << result.problems_text();
  EXPECT_EQ(result.config->pools.at(0).keys.size(), 1u);
  EXPECT_EQ(result.config->path, temp.path() + "/keys.toml");
}
