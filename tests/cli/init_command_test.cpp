// `keyshim init`: a private starter file that never replaces an existing one,
// and that `check` accepts once its placeholder variable is set.
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

using keyshim::test::read_file;
using keyshim::test::run_binary;
using keyshim::test::RunOptions;
using keyshim::test::RunResult;
using keyshim::test::TempDir;

namespace {

unsigned mode_of(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

// Runs init with a permissive umask, so the modes come from keyshim itself.
RunResult init(const std::string& path) {
  mode_t previous = ::umask(0);
  RunResult result = run_binary({KEYSHIM_BINARY, "init", "-c", path});
  ::umask(previous);
  return result;
}

} // namespace

TEST(InitCommand, CreatesAPrivateFileInsidePrivateNewDirectories) {
  TempDir temp;
  std::string path = temp.path() + "/config/keyshim/keys.toml";
  RunResult result = init(path);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_EQ(mode_of(temp.path() + "/config/keyshim"), 0700u);
  EXPECT_EQ(mode_of(temp.path() + "/config"), 0700u);
  EXPECT_NE(result.out.find("wrote " + path + " (mode 0600)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("keyshim check -c " + path), std::string::npos);
}

TEST(InitCommand, NeverOverwritesAnExistingFile) {
  TempDir temp;
  std::string path = temp.write("keys.toml", "# mine\n");
  RunResult result = init(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(path + ": already exists"), std::string::npos) << result.err;
  EXPECT_EQ(read_file(path), "# mine\n");
}

TEST(InitCommand, SecondRunRefusesAndKeepsTheFirstFile) {
  TempDir temp;
  std::string path = temp.path() + "/keys.toml";
  ASSERT_EQ(init(path).exit_code, 0);
  std::string first = read_file(path);
  EXPECT_EQ(init(path).exit_code, 1);
  EXPECT_EQ(read_file(path), first);
}

TEST(InitCommand, StarterFileTellsCheckWhichVariableToSet) {
  TempDir temp;
  std::string path = temp.path() + "/keys.toml";
  ASSERT_EQ(init(path).exit_code, 0);
  RunOptions options;
  options.unset_env = {"KEYSHIM_OPENAI_KEY"};
  RunResult result = run_binary({KEYSHIM_BINARY, "check", "-c", path}, options);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("pools.openai.keys[1]: \"key_env\" names KEYSHIM_OPENAI_KEY, which is not set"),
            std::string::npos)
      << result.err;
}

TEST(InitCommand, StarterFilePassesCheckOnceTheKeyIsGiven) {
  TempDir temp;
  std::string path = temp.path() + "/keys.toml";
  ASSERT_EQ(init(path).exit_code, 0);
  RunOptions options;
  options.env = {{"KEYSHIM_OPENAI_KEY", "sk-init-starter-key"}};
  RunResult result = run_binary({KEYSHIM_BINARY, "check", "-c", path}, options);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("openai-main"), std::string::npos);
  EXPECT_EQ(result.out.find("sk-init-starter-key"), std::string::npos);
}

TEST(InitCommand, StarterFileMentionsEveryServerAndUpstreamSetting) {
  TempDir temp;
  std::string path = temp.path() + "/keys.toml";
  ASSERT_EQ(init(path).exit_code, 0);
  std::string text = read_file(path);
  for (const char* name : {"listen", "client_token", "allowed_origins", "max_request_body", "drain_timeout",
                           "base_url", "auth", "strategy", "max_attempts", "connect_timeout",
                           "first_byte_timeout", "idle_timeout", "max_cooldown", "ca_file"}) {
    EXPECT_NE(text.find(std::string("# ") + name + " = "), std::string::npos) << name;
  }
}

TEST(InitCommand, UnwritableLocationFailsWithAMessage) {
  TempDir temp;
  std::string blocker = temp.write("file", "x");
  RunResult result = init(blocker + "/keys.toml");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_FALSE(result.err.empty());
}

TEST(InitCommand, StarterFileServesOpenAIAtItsPrefixAndOffersAnthropicAndGeminiPools) {
  TempDir temp;
  std::string path = temp.path() + "/keys.toml";
  ASSERT_EQ(init(path).exit_code, 0);
  std::string text = read_file(path);
  EXPECT_NE(text.find("\n[pools.openai]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n# [pools.anthropic]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n# [pools.gemini]\n"), std::string::npos) << text;
  RunOptions options;
  options.env = {{"KEYSHIM_OPENAI_KEY", "sk-init-starter-key"}};
  RunResult result = run_binary({KEYSHIM_BINARY, "check", "-c", path}, options);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("/openai/"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("pool openai"), std::string::npos) << result.out;
}
