// `keyshim check` run as a black box: exit 0 if serve would use the file, 1
// with FILE:LINE:COL messages if not, and never a key byte in the output.
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

using keyshim::test::RunOptions;
using keyshim::test::RunResult;
using keyshim::test::TempDir;

namespace {

constexpr const char* k_key_1 = "sk-cli-check-key-one-0001";
constexpr const char* k_key_2 = "sk-cli-check-key-two-0002";

const std::string k_good = std::string(R"([upstream]
strategy = "round-robin"

[[keys]]
label = "personal"
key = ")") + k_key_1 + R"("

[[keys]]
label = "team"
key_env = "KEYSHIM_CLI_TEAM_KEY"
base_url = "https://api.anthropic.com"
auth = "x-api-key"
)";

RunResult check(const std::string& path, RunOptions options = {}) {
  options.env.emplace_back("KEYSHIM_CLI_TEAM_KEY", k_key_2);
  return keyshim::test::run_binary({KEYSHIM_BINARY, "check", "-c", path}, options);
}

void expect_no_key_material(const RunResult& result) {
  EXPECT_EQ(result.all_output().find(k_key_1), std::string::npos) << result.all_output();
  EXPECT_EQ(result.all_output().find(k_key_2), std::string::npos) << result.all_output();
  EXPECT_EQ(result.all_output().find("cli-check-key"), std::string::npos) << result.all_output();
}

} // namespace

TEST(CheckCommand, GoodFilePrintsTheKeyTableAndExitsZero) {
  TempDir temp;
  std::string path = temp.write("keys.toml", k_good);
  RunResult result = check(path);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_NE(result.out.find("LABEL"), std::string::npos);
  EXPECT_NE(result.out.find("FINGERPRINT"), std::string::npos);
  EXPECT_NE(result.out.find("personal"), std::string::npos);
  EXPECT_NE(result.out.find("sk-c~"), std::string::npos);
  EXPECT_NE(result.out.find("https://api.anthropic.com"), std::string::npos);
  EXPECT_NE(result.out.find("x-api-key"), std::string::npos);
  EXPECT_NE(result.out.find("key_env KEYSHIM_CLI_TEAM_KEY"), std::string::npos);
  EXPECT_NE(result.out.find(path + ": ok: 2 keys in 1 pool, listen 127.0.0.1:8787"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("/ (the rest) -> pool default (https://api.openai.com, strategy round-robin)"),
            std::string::npos)
      << result.out;
  expect_no_key_material(result);
}

TEST(CheckCommand, BadFileListsEveryProblemWithPositionsAndExitsOne) {
  TempDir temp;
  std::string path = temp.write("keys.toml", "[server]\nlisten = \"0.0.0.0:1\"\nlistn = 1\n"
                                             "[[keys]]\nkey = \"sk-cli-check-key-one-0001\"\n"
                                             "[[keys]]\nkey = \"sk-cli-check-key-one-0001\"\n");
  RunResult result = check(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find(path + ":2:10: server: \"listen\" must be a loopback address"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find(path + ":3:1: server: unknown setting \"listn\"; did you mean \"listen\"?"),
            std::string::npos);
  EXPECT_NE(result.err.find(path + ":6:1: keys[2]: same key as keys[1]"), std::string::npos);
  EXPECT_NE(result.err.find("3 problems"), std::string::npos);
  expect_no_key_material(result);
}

// issue 9: toml++ recursed once per header part and the check segfaulted.
TEST(CheckCommand, FiftyThousandPartTableHeaderIsRefusedWithItsPositionNotACrash) {
  TempDir temp;
  std::string header = "[a";
  for (int i = 1; i < 50'000; ++i) {
    header += ".a";
  }
  std::string path =
      temp.write("keys.toml", "[[keys]]\nkey = \"sk-cli-check-key-one-0001\"\n" + header + "]\n");
  RunResult result = check(path);
  EXPECT_EQ(result.term_signal, 0);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(path + ":3:1: table header nests deeper than 64 levels"), std::string::npos)
      << result.err.substr(0, 500);
  expect_no_key_material(result);
}

TEST(CheckCommand, TooOpenFileIsRefusedWithTheChmodFix) {
  TempDir temp;
  std::string path = temp.write("keys.toml", k_good, 0644);
  RunResult result = check(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(path +
                            ": permissions 0644 are too open: other users can read your API "
                            "keys. Run: chmod 600 " +
                            path),
            std::string::npos)
      << result.err;
  expect_no_key_material(result);
}

TEST(CheckCommand, MissingFileSuggestsInit) {
  TempDir temp;
  std::string path = temp.path() + "/keys.toml";
  RunResult result = check(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("keyshim init -c " + path), std::string::npos) << result.err;
}

TEST(CheckCommand, UnsetKeyEnvIsNamedButNothingElseLeaks) {
  TempDir temp;
  std::string path = temp.write("keys.toml", k_good);
  RunOptions options;
  options.unset_env = {"KEYSHIM_CLI_TEAM_KEY"};
  RunResult result = keyshim::test::run_binary({KEYSHIM_BINARY, "check", "-c", path}, options);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(":10:11: keys[2]: \"key_env\" names KEYSHIM_CLI_TEAM_KEY, which is not set"),
            std::string::npos)
      << result.err;
  expect_no_key_material(result);
}

TEST(CheckCommand, ReadsKeyshimConfigWhenNoFileIsGiven) {
  TempDir temp;
  std::string path = temp.write("elsewhere.toml", k_good);
  RunOptions options;
  options.env = {{"KEYSHIM_CONFIG", path}, {"KEYSHIM_CLI_TEAM_KEY", k_key_2}};
  RunResult result = keyshim::test::run_binary({KEYSHIM_BINARY, "check"}, options);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find(path + ": ok"), std::string::npos);
}

TEST(CheckCommand, FallsBackToXdgConfigHome) {
  TempDir temp;
  temp.write("keyshim/keys.toml", k_good);
  RunOptions options;
  options.unset_env = {"KEYSHIM_CONFIG"};
  options.env = {{"XDG_CONFIG_HOME", temp.path()}, {"KEYSHIM_CLI_TEAM_KEY", k_key_2}};
  RunResult result = keyshim::test::run_binary({KEYSHIM_BINARY, "check"}, options);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find(temp.path() + "/keyshim/keys.toml: ok"), std::string::npos);
}

TEST(CheckCommand, ShippedExampleFilePasses) {
  TempDir temp;
  std::string example = keyshim::test::read_file(std::string(KEYSHIM_SOURCE_DIR) + "/keys.example.toml");
  ASSERT_FALSE(example.empty());
  std::string path = temp.write("keys.toml", example);
  // As a new user runs it: no variable set for it (this one it once needed).
  RunOptions options;
  options.unset_env = {"KEYSHIM_EXAMPLE_TEAM_KEY"};
  RunResult result = keyshim::test::run_binary({KEYSHIM_BINARY, "check", "-c", path}, options);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("ok: 5 keys in 3 pools"), std::string::npos) << result.out;
  EXPECT_EQ(result.all_output().find("sk-example-not-a-real-key"), std::string::npos);
}

TEST(CheckCommand, ListsTheLimitsOfYourOwnOfEachKeyThatHasAny) {
  TempDir temp;
  std::string path = temp.write("keys.toml", R"([pools.openai]
base_url = "https://api.openai.com"
tokens_per_day = "2M"
day_start = "09:00"
day_zone = "-08:00"

[[pools.openai.keys]]
label = "o1"
key = "sk-check-openai"

[[pools.openai.keys]]
label = "trial"
key = "sk-check-trial"
requests_per_minute = 1

[pools.free]
base_url = "https://api.example.com"

[[pools.free.keys]]
label = "f1"
key = "sk-check-free"
)");
  RunResult result = check(path);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("limits of your own (keyshim status shows the use):\n"
                            "  openai o1: 2000000 tokens per day (days from 09:00 -08:00)\n"
                            "  openai trial: 1 request per minute, 2000000 tokens per day (days from 09:00 "
                            "-08:00)\n\n"),
            std::string::npos)
      << result.out;
  EXPECT_EQ(result.out.find(" f1:"), std::string::npos) << result.out;
}

TEST(CheckCommand, PrintsTheRouteOfEveryPool) {
  TempDir temp;
  std::string path = temp.write("keys.toml", R"([pools.openai]
base_url = "https://api.openai.com"

[[pools.openai.keys]]
label = "o1"
key = "sk-check-openai"

[pools.anthropic]
base_url = "https://api.anthropic.com"
auth = "x-api-key"
max_wait = "30s"

[[pools.anthropic.keys]]
label = "a1"
key = "sk-ant-check"
)");
  RunResult result = check(path);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("/openai/     -> pool openai (https://api.openai.com, strategy ordered)"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("/anthropic/  -> pool anthropic (https://api.anthropic.com, strategy ordered, "
                            "waits for a key)"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find(": ok: 2 keys in 2 pools"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("sk-check-openai"), std::string::npos);
  EXPECT_EQ(result.out.find("sk-ant-check"), std::string::npos);
}

TEST(CheckCommand, RefusesAPoolNamedLikeAnApiVersionSayingWhatItWouldCapture) {
  TempDir temp;
  std::string path = temp.write("keys.toml", R"([[keys]]
key = "sk-cli-check-key-one-0001"

[pools.v1]
base_url = "https://api.anthropic.com"

[[pools.v1.keys]]
key = "sk-cli-check-key-two-0002"
)");
  RunResult result = check(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find(path + ":4:8: [pools.v1]: \"v1\" reads as an API version: its route /v1 would "
                                   "capture the paths tools send to the default pool, such as /v1/models; "
                                   "choose another pool name"),
            std::string::npos)
      << result.err;
  expect_no_key_material(result);
}

TEST(CheckCommand, AModelsColumnShowsWhichModelsEachKeyServesWhenSomeKeyIsRestricted) {
  TempDir temp;
  std::string text = k_good;
  text.replace(text.find("[[keys]]\nlabel = \"team\""), 8, "[[keys]]\nmodels = [\"claude-*\"]");
  text.insert(text.find("[[keys]]"), "exclude_models = [\"gpt-5*\"]\n\n");
  std::string path = temp.write("keys.toml", text);
  RunResult result = check(path);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto line_of = [&](const std::string& start) {
    std::size_t at = result.out.find(start);
    return at == std::string::npos ? std::string() : result.out.substr(at, result.out.find('\n', at) - at);
  };
  auto ends_with = [](const std::string& line, const std::string& end) {
    return line.size() >= end.size() && line.compare(line.size() - end.size(), end.size(), end) == 0;
  };
  EXPECT_TRUE(ends_with(line_of("POOL "), "  MODELS")) << result.out;
  EXPECT_TRUE(ends_with(line_of("default  personal"), "  every model except gpt-5*")) << result.out;
  EXPECT_TRUE(ends_with(line_of("default  team"), "  claude-* except gpt-5*")) << result.out;
  expect_no_key_material(result);
}

TEST(CheckCommand, NoModelsColumnWhileEveryKeyServesEveryModel) {
  TempDir temp;
  RunResult result = check(temp.write("keys.toml", k_good));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.find("MODELS"), std::string::npos) << result.out;
}
