// Black-box tests of `keyshim env` and `keyshim service ... --dry-run`: the
// built binary, a temporary HOME, and nothing outside it touched.
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

using keyshim::test::run_binary;
using keyshim::test::RunOptions;
using keyshim::test::RunResult;
using keyshim::test::TempDir;

namespace {

constexpr const char* k_openai_pool = R"([server]
listen = "127.0.0.1:9911"
client_token = "shim'token"

[[keys]]
label = "personal"
key = "sk-test-0123456789abcdef"
)";

constexpr const char* k_anthropic_pool = R"([server]
listen = "127.0.0.1:9912"

[upstream]
base_url = "https://api.anthropic.com"
auth = "x-api-key"

[[keys]]
key = "sk-ant-test-0123456789abcdef"
)";

// A private HOME with no inherited config locations, so the binary sees only
// what the test gives it.
RunOptions isolated(const TempDir& home) {
  RunOptions options;
  options.env = {{"HOME", home.path()}};
  options.unset_env = {"KEYSHIM_CONFIG", "XDG_CONFIG_HOME"};
  return options;
}

RunResult run_keyshim(const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv = {KEYSHIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_binary(argv, options);
}

bool has_text(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

} // namespace

TEST(EnvCommand, PrintsShAssignmentsForTheConfiguredAddressAndClientToken) {
  TempDir home;
  std::string pool = home.write("keys.toml", k_openai_pool);
  RunResult r = run_keyshim({"env", "-c", pool}, isolated(home));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_text(r.out, "export KEYSHIM_URL='http://127.0.0.1:9911'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export OPENAI_BASE_URL='http://127.0.0.1:9911/v1'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export OPENAI_API_KEY='shim'\\''token'\n")) << r.out;
  // An OpenAI pool does not take over Claude Code or gemini-cli.
  EXPECT_FALSE(has_text(r.out, "ANTHROPIC_")) << r.out;
  EXPECT_FALSE(has_text(r.out, "GEMINI")) << r.out;
  // The pool's own keys never appear.
  EXPECT_FALSE(has_text(r.all_output(), "sk-test-0123456789abcdef"));
}

TEST(EnvCommand, AnthropicPoolPointsAnthropicToolsAtTheShimWithoutV1) {
  TempDir home;
  std::string pool = home.write("keys.toml", k_anthropic_pool);
  RunResult r = run_keyshim({"env", "-c", pool}, isolated(home));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_text(r.out, "export ANTHROPIC_BASE_URL='http://127.0.0.1:9912'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export ANTHROPIC_API_KEY='keyshim'\n")) << r.out;
  EXPECT_FALSE(has_text(r.out, "OPENAI_")) << r.out;
}

TEST(EnvCommand, EachToolIsPointedAtItsOwnPool) {
  TempDir home;
  std::string pool = home.write("keys.toml", R"([server]
listen = "127.0.0.1:9913"

[pools.openai]
[[pools.openai.keys]]
key = "sk-env-openai-0001"

[pools.anthropic]
base_url = "https://api.anthropic.com"
auth = "x-api-key"
[[pools.anthropic.keys]]
key = "sk-ant-env-0002"

[pools.gemini]
base_url = "https://generativelanguage.googleapis.com"
auth = "x-goog-api-key"
[[pools.gemini.keys]]
key = "AIza-env-0003"
)");
  RunResult r = run_keyshim({"env", "-c", pool}, isolated(home));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_text(r.out, "export KEYSHIM_URL='http://127.0.0.1:9913'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export OPENAI_BASE_URL='http://127.0.0.1:9913/openai/v1'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export ANTHROPIC_BASE_URL='http://127.0.0.1:9913/anthropic'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export GOOGLE_GEMINI_BASE_URL='http://127.0.0.1:9913/gemini'\n")) << r.out;
  // aider's variable, Codex's key variable, and what is not a variable.
  EXPECT_TRUE(has_text(r.out, "export OPENAI_API_BASE='http://127.0.0.1:9913/openai/v1'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export CODEX_API_KEY='keyshim'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export GEMINI_DEFAULT_AUTH_TYPE='gemini-api-key'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\n# codex: run `codex -c openai_base_url=http://127.0.0.1:9913/openai/v1`"))
      << r.out;
  EXPECT_TRUE(has_text(r.out, "\n# qwen: run `qwen --auth-type openai`")) << r.out;
  for (const char* key : {"sk-env-openai-0001", "sk-ant-env-0002", "AIza-env-0003"}) {
    EXPECT_FALSE(has_text(r.all_output(), key)) << key;
  }
}

TEST(EnvCommand, FishSyntax) {
  TempDir home;
  std::string pool = home.write("keys.toml", k_openai_pool);
  RunResult r = run_keyshim({"env", "-c", pool, "--shell", "fish"}, isolated(home));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_text(r.out, "set -gx OPENAI_BASE_URL 'http://127.0.0.1:9911/v1'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "set -gx OPENAI_API_KEY 'shim\\'token'\n")) << r.out;
}

TEST(EnvCommand, OutputSurvivesEvalInAPosixShell) {
  TempDir home;
  std::string pool = home.write("keys.toml", k_openai_pool);
  RunOptions options = isolated(home);
  RunResult r = run_binary({"sh", "-c",
                            "eval \"$(\"$0\" env -c \"$1\")\" && printf '%s|%s' "
                            "\"$OPENAI_API_KEY\" \"$OPENAI_BASE_URL\"",
                            KEYSHIM_BINARY, pool},
                           options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "shim'token|http://127.0.0.1:9911/v1");
}

TEST(EnvCommand, UnusablePoolFileStillPrintsTheDefaultsWithAWarning) {
  TempDir home;
  RunResult r = run_keyshim({"env", "-c", home.path() + "/missing.toml"}, isolated(home));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(has_text(r.out, "export OPENAI_BASE_URL='http://127.0.0.1:8787/v1'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export ANTHROPIC_BASE_URL='http://127.0.0.1:8787'\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "export GOOGLE_GEMINI_BASE_URL='http://127.0.0.1:8787'\n")) << r.out;
  EXPECT_TRUE(has_text(r.err, "warning")) << r.err;
  EXPECT_TRUE(has_text(r.err, "missing.toml")) << r.err;
}

TEST(EnvCommand, UnknownShellIsAUsageError) {
  TempDir home;
  RunResult r = run_keyshim({"env", "--shell", "csh"}, isolated(home));
  EXPECT_EQ(r.exit_code, 2);
}

TEST(ServiceCommand, InstallDryRunPrintsTheUnitAndCommandsAndTouchesNothing) {
  TempDir home;
  std::string pool = home.write("my keys/keys.toml", k_openai_pool);
  RunResult r = run_keyshim({"service", "install", "--dry-run", "-c", pool}, isolated(home));
  ASSERT_EQ(r.exit_code, 0) << r.err;
#ifdef __APPLE__
  EXPECT_TRUE(has_text(r.out, "launchctl bootstrap")) << r.out;
#else
  std::string binary = std::filesystem::canonical(KEYSHIM_BINARY).string();
  std::string unit = home.path() + "/.config/systemd/user/keyshim.service";
  EXPECT_TRUE(has_text(r.out, "==> " + unit + " <==\n")) << r.out;
  // The pool path has a space, so systemd needs it quoted.
  EXPECT_TRUE(has_text(r.out, "\nExecStart=" + binary + " serve -c \"" + pool + "\"\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\nsystemctl --user daemon-reload\n")) << r.out;
  // By default systemd owns the pool file's address and starts keyshim on demand.
  EXPECT_TRUE(has_text(r.out, "==> " + home.path() + "/.config/systemd/user/keyshim.socket <==\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\nListenStream=127.0.0.1:9911\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\nRequires=keyshim.socket\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\nsystemctl --user enable keyshim.socket\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\nsystemctl --user restart keyshim.socket\n")) << r.out;
#endif
  EXPECT_FALSE(std::filesystem::exists(home.path() + "/.config"));
  EXPECT_FALSE(std::filesystem::exists(home.path() + "/Library"));
}

TEST(ServiceCommand, InstallNoSocketDryRunIsThePlainServiceStartedAtLogin) {
  TempDir home;
  std::string pool = home.write("keys.toml", k_openai_pool);
  RunResult r = run_keyshim({"service", "install", "--no-socket", "--dry-run", "-c", pool}, isolated(home));
  ASSERT_EQ(r.exit_code, 0) << r.err;
#ifndef __APPLE__
  EXPECT_FALSE(has_text(r.out, "ListenStream=")) << r.out;
  EXPECT_FALSE(has_text(r.out, "Requires=")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\nsystemctl --user enable keyshim.service\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\nsystemctl --user restart keyshim.service\n")) << r.out;
#endif
}

TEST(ServiceCommand, SocketInstallRefusesAPoolFileWhoseListenHasNoFixedPort) {
  TempDir home;
  std::string pool = home.write(
      "keys.toml", "[server]\nlisten = \"127.0.0.1:0\"\n\n[[keys]]\nkey = \"sk-test-0123456789abcdef\"\n");
  RunResult r = run_keyshim({"service", "install", "--dry-run", "-c", pool}, isolated(home));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has_text(r.err, "--no-socket")) << r.err;
}

TEST(ServiceCommand, InstallBakesInTheAbsolutePathOfARelativePoolFile) {
  TempDir home;
  home.write("keys.toml", k_openai_pool);
  RunOptions options = isolated(home);
  options.cwd = home.path();
  RunResult r = run_keyshim({"service", "install", "--dry-run", "-c", "keys.toml"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_text(r.out, " -c " + home.path() + "/keys.toml")) << r.out;
}

TEST(ServiceCommand, InstallRefusesWhileThePoolFileHasProblems) {
  TempDir home;
  std::string pool = home.write("keys.toml", "[server]\nlisen = \"127.0.0.1:8787\"\n");
  RunResult r = run_keyshim({"service", "install", "--dry-run", "-c", pool}, isolated(home));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_text(r.err, "not installing")) << r.err;
  EXPECT_TRUE(has_text(r.err, "keys.toml:2")) << r.err;
  EXPECT_FALSE(has_text(r.out, "ExecStart=")) << r.out;
}

TEST(ServiceCommand, InstallRefusesAMissingPoolFileWithoutDryRunToo) {
  TempDir home;
  RunResult r = run_keyshim({"service", "install", "-c", home.path() + "/nope.toml"}, isolated(home));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_text(r.err, "not installing")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(home.path() + "/.config"));
}

TEST(ServiceCommand, UninstallDryRunListsTheSteps) {
  TempDir home;
  RunResult r = run_keyshim({"service", "uninstall", "--dry-run"}, isolated(home));
  ASSERT_EQ(r.exit_code, 0) << r.err;
#ifndef __APPLE__
  std::string units = home.path() + "/.config/systemd/user/";
  EXPECT_EQ(r.out, "systemctl --user disable --now keyshim.socket   # allowed to fail\n"
                   "systemctl --user disable --now keyshim.service   # allowed to fail\n"
                   "rm -f " +
                       units + "keyshim.socket\nrm -f " + units +
                       "keyshim.service\n"
                       "systemctl --user daemon-reload\n");
#endif
}

TEST(ServiceCommand, WithoutAnActionIsAUsageError) {
  TempDir home;
  EXPECT_EQ(run_keyshim({"service"}, isolated(home)).exit_code, 2);
  EXPECT_EQ(run_keyshim({"service", "restart"}, isolated(home)).exit_code, 2);
}
