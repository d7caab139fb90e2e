// What `keyshim run` adds for tools that read settings other than variables:
// Codex's base URL and Qwen Code's auth type on their command lines, and
// gemini-cli's API-key auth in a private home. The tools are shell scripts
// named like them on PATH that print what they got.
#include "cli/tool_arguments.hpp"
#include "run_fixture.hpp"
#include "support/http_raw_client.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

using keyshim::cli::ToolArguments;
using keyshim::cli::ToolVariable;
using keyshim::test::read_file;
using keyshim::test::RunOptions;
using keyshim::test::RunResult;
using keyshim::test::TempDir;
using keyshim::test::run::contains;

namespace {

using Argv = std::vector<std::string>;

const std::vector<ToolVariable> k_openai_variables = {{"OPENAI_BASE_URL", "http://127.0.0.1:8787/openai/v1"},
                                                      {"OPENAI_API_KEY", "keyshim"}};

Argv rewritten(const Argv& argv) {
  return keyshim::cli::with_tool_arguments(argv, keyshim::cli::tool_arguments(k_openai_variables));
}

} // namespace

TEST(ToolArguments, CodexGetsItsBaseUrlRightAfterItsName) {
  EXPECT_EQ(rewritten({"codex", "exec", "say pong"}),
            (Argv{"codex", "-c", "openai_base_url=http://127.0.0.1:8787/openai/v1", "exec", "say pong"}));
  EXPECT_EQ(rewritten({"/opt/bin/codex"}),
            (Argv{"/opt/bin/codex", "-c", "openai_base_url=http://127.0.0.1:8787/openai/v1"}));
}

TEST(ToolArguments, CodexKeepsTheUsersOwnBaseUrl) {
  Argv own = {"codex", "-c", "openai_base_url=https://example.test/v1", "exec", "hi"};
  EXPECT_EQ(rewritten(own), own);
  Argv long_form = {"codex", "--config", "openai_base_url=https://example.test/v1"};
  EXPECT_EQ(rewritten(long_form), long_form);
}

TEST(ToolArguments, QwenGetsTheOpenAiAuthTypeUnlessItNamesOne) {
  EXPECT_EQ(rewritten({"qwen", "-p", "hi"}), (Argv{"qwen", "--auth-type", "openai", "-p", "hi"}));
  Argv own = {"qwen", "--auth-type=anthropic", "-p", "hi"};
  EXPECT_EQ(rewritten(own), own);
  Argv spaced = {"qwen", "--auth-type", "gemini"};
  EXPECT_EQ(rewritten(spaced), spaced);
}

TEST(ToolArguments, OtherCommandsAndPromptsNamingToolsAreUnchanged) {
  Argv wrapper = {"sh", "-c", "codex exec hi"};
  EXPECT_EQ(rewritten(wrapper), wrapper);
  Argv similar = {"codex-helper", "x"};
  EXPECT_EQ(rewritten(similar), similar);
}

TEST(ToolArguments, NoOpenAiPoolMeansNothingToAdd) {
  std::vector<ToolVariable> anthropic_only = {{"ANTHROPIC_BASE_URL", "http://127.0.0.1:8787"}};
  EXPECT_TRUE(keyshim::cli::tool_arguments(anthropic_only).empty());
  Argv codex = {"codex", "exec", "hi"};
  EXPECT_EQ(keyshim::cli::with_tool_arguments(codex, keyshim::cli::tool_arguments(anthropic_only)), codex);
}

namespace {

// A pool file with an OpenAI and a Gemini pool, and fake tools on PATH.
class RunToolSetup : public ::testing::Test {
protected:
  void SetUp() override {
    m_port = keyshim::test::unused_loopback_port();
    ASSERT_GT(m_port, 0);
    m_url = "http://127.0.0.1:" + std::to_string(m_port);
    m_pool = m_dir.write("keys.toml",
                         "[server]\nlisten = \"127.0.0.1:" + std::to_string(m_port) +
                             "\"\n\n[pools.openai]\n[[pools.openai.keys]]\n"
                             "key = \"sk-tool-setup-openai-0001\"\n\n"
                             "[pools.gemini]\nbase_url = \"https://generativelanguage.googleapis.com\"\n"
                             "auth = \"x-goog-api-key\"\n[[pools.gemini.keys]]\n"
                             "key = \"AIza-tool-setup-0002\"\n");
    std::filesystem::create_directories(m_dir.path() + "/bin");
    std::filesystem::create_directories(m_dir.path() + "/home");
  }

  void add_tool(const std::string& name, const std::string& script) const {
    m_dir.write("bin/" + name, "#!/bin/sh\n" + script, 0700);
  }

  RunResult run(const Argv& command) const {
    Argv argv = {KEYSHIM_BINARY, "run", "-c", m_pool, "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    RunOptions options;
    options.env = {
        {"HOME", home()}, {"XDG_RUNTIME_DIR", m_dir.path()}, {"PATH", m_dir.path() + "/bin:/usr/bin:/bin"}};
    options.unset_env = {"KEYSHIM_CONFIG", "XDG_CONFIG_HOME", "GEMINI_CLI_HOME", "TMPDIR"};
    return keyshim::test::run_binary(argv, options);
  }

  std::string home() const { return m_dir.path() + "/home"; }

  TempDir m_dir;
  int m_port = 0;
  std::string m_url;
  std::string m_pool;
};

// The fake gemini: where its home is, what its settings say, which entries
// are links, and a file it creates on its first run, as gemini does.
constexpr const char* k_fake_gemini =
    "echo \"home=$GEMINI_CLI_HOME\"\n"
    "cat \"${GEMINI_CLI_HOME:-$HOME}/.gemini/settings.json\"\n"
    "[ -L \"$GEMINI_CLI_HOME/.gemini/extensions\" ] && echo linked-extensions\n"
    "echo first-run > \"${GEMINI_CLI_HOME:-$HOME}/.gemini/installation_id\"\n";

} // namespace

TEST_F(RunToolSetup, CodexGetsTheBaseUrlOnItsCommandLineAndItsKeyVariable) {
  add_tool("codex", "echo \"args=$*\"\necho \"key=$CODEX_API_KEY\"\n");
  RunResult r = run({"codex", "exec", "say pong"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "args=-c openai_base_url=" + m_url + "/openai/v1 exec say pong\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "key=keyshim\n")) << r.out;
}

TEST_F(RunToolSetup, QwenGetsTheOpenAiAuthType) {
  add_tool("qwen", "echo \"args=$*\"\n");
  RunResult r = run({"qwen", "-p", "say pong"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "args=--auth-type openai -p say pong\n")) << r.out;
}

TEST_F(RunToolSetup, GeminiRunsInAPrivateHomeWhoseSettingsSelectApiKeyAuth) {
  add_tool("gemini", k_fake_gemini);
  std::filesystem::create_directories(home() + "/.gemini/extensions");
  const std::string own = "{\n  // the user's comment\n  \"ui\": {\"theme\": \"Dracula\"}\n}\n";
  m_dir.write("home/.gemini/settings.json", own);

  RunResult r = run({"gemini", "-p", "say pong"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "home=\n")) << r.out;
  EXPECT_TRUE(contains(r.out, R"("ui":{"theme":"Dracula"})")) << r.out;
  EXPECT_TRUE(contains(r.out, R"("security":{"auth":{"selectedType":"gemini-api-key"}})")) << r.out;
  EXPECT_TRUE(contains(r.out, "linked-extensions\n")) << r.out;
  // The user's file is untouched; what gemini created is where it belongs;
  // the private home is gone.
  EXPECT_EQ(read_file(home() + "/.gemini/settings.json"), own);
  EXPECT_EQ(read_file(home() + "/.gemini/installation_id"), "first-run\n");
  std::string private_home = r.out.substr(5, r.out.find('\n') - 5);
  EXPECT_FALSE(std::filesystem::exists(private_home)) << private_home;
}

TEST_F(RunToolSetup, GeminiWhoseSettingsSelectApiKeyAuthRunsInTheUsersHome) {
  add_tool("gemini", k_fake_gemini);
  m_dir.write("home/.gemini/settings.json", R"({"security": {"auth": {"selectedType": "gemini-api-key"}}})");
  RunResult r = run({"gemini", "-p", "say pong"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "home=\n")) << r.out;
  EXPECT_EQ(read_file(home() + "/.gemini/installation_id"), "first-run\n");
}

TEST_F(RunToolSetup, GeminiWithoutAnyGeminiDirectoryGetsOneAfterItsFirstRun) {
  add_tool("gemini", k_fake_gemini);
  RunResult r = run({"gemini", "-p", "say pong"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, R"({"security":{"auth":{"selectedType":"gemini-api-key"}}})")) << r.out;
  EXPECT_EQ(read_file(home() + "/.gemini/installation_id"), "first-run\n");
  struct stat info {};
  ASSERT_EQ(stat((home() + "/.gemini").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
}

TEST_F(RunToolSetup, GeminiSettingsThatSelectAnotherAuthGetApiKeyAuthForTheRun) {
  add_tool("gemini", k_fake_gemini);
  const std::string own = R"({"security": {"auth": {"selectedType": "oauth-personal", "useExternal": false},)"
                          R"( "folderTrust": {"enabled": true}}})";
  m_dir.write("home/.gemini/settings.json", own);
  RunResult r = run({"gemini", "-p", "say pong"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, R"({"security":{"auth":{"selectedType":"gemini-api-key","useExternal":false},)"
                              R"("folderTrust":{"enabled":true}}})"))
      << r.out;
  EXPECT_EQ(read_file(home() + "/.gemini/settings.json"), own);
}
