#include "config/loader.hpp"
#include "support/temp_dir.hpp"
#include "unit/config/load_text.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

using namespace keyshim::config;
using keyshim::config::test_support::load;
using keyshim::config::test_support::load_ok;
using std::chrono::milliseconds;

namespace {

// The one problem `text` has, as "FILE:LINE:COL: message".
std::string only_problem(const std::string& text) {
  LoadResult result = load(text);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.problems.size(), 1u) << result.problems_text();
  return result.problems.empty() ? "" : result.problems.front().text();
}

constexpr const char* k_one_key = "[[keys]]\nkey = \"sk-loader-test-1\"\n";

} // namespace

TEST(Problem, TextPutsTheLocationFirst) {
  EXPECT_EQ((Problem{"keys.toml", 14, 9, "bad"}).text(), "keys.toml:14:9: bad");
  EXPECT_EQ((Problem{"keys.toml", 0, 0, "bad"}).text(), "keys.toml: bad");
}

TEST(LoadPool, MinimalFileGetsEveryDefault) {
  Config config = load_ok(k_one_key);
  EXPECT_EQ(config.path, "keys.toml");
  EXPECT_EQ(config.server.listen, (ListenAddress{"127.0.0.1", 8787}));
  EXPECT_FALSE(config.server.client_token);
  EXPECT_TRUE(config.server.allowed_origins.empty());
  EXPECT_EQ(config.server.max_request_body, 64u * 1024 * 1024);
  EXPECT_EQ(config.server.drain_timeout, milliseconds(30'000));
  EXPECT_EQ(config.pools.at(0).upstream.base_url.text(), "https://api.openai.com");
  EXPECT_EQ(config.pools.at(0).upstream.auth.text(), "bearer");
  EXPECT_EQ(config.pools.at(0).upstream.strategy, Strategy::ordered);
  EXPECT_EQ(config.pools.at(0).upstream.max_attempts, 4);
  EXPECT_EQ(config.pools.at(0).upstream.first_byte_timeout, milliseconds(600'000));
  ASSERT_EQ(config.pools.at(0).keys.size(), 1u);
  const KeyConfig& key = config.pools.at(0).keys[0];
  EXPECT_EQ(key.secret.reveal(), "sk-loader-test-1");
  EXPECT_EQ(key.label, key.secret.fingerprint()) << "label defaults to the fingerprint";
  EXPECT_EQ(key.base_url, config.pools.at(0).upstream.base_url);
  EXPECT_EQ(key.source, "key");
}

TEST(LoadPool, ReadsEverySetting) {
  keyshim::test::TempDir temp;
  std::string ca =
      temp.write("ca.pem", keyshim::test::read_file(KEYSHIM_TEST_DATA_DIR "/config/test-ca.pem"));
  Config config = load_ok(R"([server]
listen = "[::1]:9999"
client_token = "local-token-123"
allowed_origins = ["http://localhost:3000"]
max_request_body = "512KiB"
drain_timeout = 5

[upstream]
base_url = "https://api.anthropic.com/prefix/"
auth = "x-api-key"
strategy = "least-recently-used"
max_attempts = 7
connect_timeout = "250ms"
first_byte_timeout = "1h30m"
idle_timeout = 90
max_cooldown = "2h"
ca_file = ")" + ca + R"("

[[keys]]
label = "a"
key = "sk-ant-1"
)");
  EXPECT_EQ(config.server.listen, (ListenAddress{"::1", 9999}));
  ASSERT_TRUE(config.server.client_token);
  EXPECT_EQ(config.server.client_token->reveal(), "local-token-123");
  EXPECT_EQ(config.server.allowed_origins, std::vector<std::string>{"http://localhost:3000"});
  EXPECT_EQ(config.server.max_request_body, 512u * 1024);
  EXPECT_EQ(config.server.drain_timeout, milliseconds(5000));
  EXPECT_EQ(config.pools.at(0).upstream.base_url,
            (UpstreamUrl{"https", "api.anthropic.com", 443, "/prefix"}));
  EXPECT_EQ(config.pools.at(0).upstream.auth, (Auth{AuthStyle::x_api_key, ""}));
  EXPECT_EQ(config.pools.at(0).upstream.strategy, Strategy::least_recently_used);
  EXPECT_EQ(config.pools.at(0).upstream.max_attempts, 7);
  EXPECT_EQ(config.pools.at(0).upstream.connect_timeout, milliseconds(250));
  EXPECT_EQ(config.pools.at(0).upstream.first_byte_timeout, milliseconds(5'400'000));
  EXPECT_EQ(config.pools.at(0).upstream.idle_timeout, milliseconds(90'000));
  EXPECT_EQ(config.pools.at(0).upstream.max_cooldown, milliseconds(7'200'000));
  EXPECT_EQ(config.pools.at(0).upstream.ca_file, ca);
  ASSERT_EQ(config.pools.at(0).keys.size(), 1u);
  EXPECT_EQ(config.pools.at(0).keys[0].label, "a");
  EXPECT_EQ(config.pools.at(0).keys[0].auth, config.pools.at(0).upstream.auth);
  EXPECT_EQ(config.pools.at(0).keys[0].ca_file, ca);
}

TEST(LoadPool, PerKeySettingsOverrideUpstreamEvenWhenUpstreamComesLater) {
  Config config = load_ok(R"([[keys]]
label = "local"
key = "sk-1"
base_url = "http://127.0.0.1:9000/v1"
auth = "query:key"

[[keys]]
label = "default"
key = "sk-2"

[upstream]
base_url = "https://generativelanguage.googleapis.com"
auth = "x-goog-api-key"
)");
  ASSERT_EQ(config.pools.at(0).keys.size(), 2u);
  EXPECT_EQ(config.pools.at(0).keys[0].base_url.text(), "http://127.0.0.1:9000/v1");
  EXPECT_EQ(config.pools.at(0).keys[0].auth, (Auth{AuthStyle::query, "key"}));
  EXPECT_EQ(config.pools.at(0).keys[1].base_url.text(), "https://generativelanguage.googleapis.com");
  EXPECT_EQ(config.pools.at(0).keys[1].auth.text(), "x-goog-api-key");
}

TEST(LoadPool, KeysKeepFileOrder) {
  Config config = load_ok("[[keys]]\nlabel='c'\nkey='sk-3'\n[[keys]]\nlabel='a'\nkey='sk-1'\n"
                          "[[keys]]\nlabel='b'\nkey='sk-2'\n");
  ASSERT_EQ(config.pools.at(0).keys.size(), 3u);
  EXPECT_EQ(config.pools.at(0).keys[0].label, "c");
  EXPECT_EQ(config.pools.at(0).keys[1].label, "a");
  EXPECT_EQ(config.pools.at(0).keys[2].label, "b");
}

TEST(LoadPool, KeyEnvIsResolved) {
  ::setenv("KEYSHIM_TEST_LOADER_KEY", "sk-env-loader", 1);
  Config config = load_ok("[[keys]]\nkey_env = \"KEYSHIM_TEST_LOADER_KEY\"\n");
  ASSERT_EQ(config.pools.at(0).keys.size(), 1u);
  EXPECT_EQ(config.pools.at(0).keys[0].secret.reveal(), "sk-env-loader");
  EXPECT_EQ(config.pools.at(0).keys[0].source, "key_env KEYSHIM_TEST_LOADER_KEY");
}

TEST(LoadPool, KeyEnvUnsetNamesTheVariableAtItsPosition) {
  ::unsetenv("KEYSHIM_TEST_LOADER_UNSET");
  EXPECT_EQ(only_problem("[[keys]]\nkey = 'sk-1'\n[[keys]]\n  key_env = \"KEYSHIM_TEST_LOADER_UNSET\"\n"),
            "keys.toml:4:13: keys[2]: \"key_env\" names KEYSHIM_TEST_LOADER_UNSET, which is not set");
}

TEST(LoadPool, KeyCmdIsRunWithoutAShell) {
  Config config = load_ok("[[keys]]\nkey_cmd = [\"/bin/echo\", \"sk-cmd-loader\"]\n");
  ASSERT_EQ(config.pools.at(0).keys.size(), 1u);
  EXPECT_EQ(config.pools.at(0).keys[0].secret.reveal(), "sk-cmd-loader");
  EXPECT_EQ(config.pools.at(0).keys[0].source, "key_cmd /bin/echo");
}

TEST(LoadPool, KeyCmdFailureIsReportedAtItsPosition) {
  EXPECT_EQ(only_problem("[[keys]]\nkey_cmd = [\"/bin/false\"]\n"),
            "keys.toml:2:11: keys[1]: \"key_cmd\" runs \"/bin/false\", which exited with status 1");
}

TEST(LoadPool, AKeyCmdKeyKeepsItsCommandToRefreshIt) {
  Config config =
      load_ok("[[keys]]\nkey_cmd = [\"/bin/echo\", \"{\\\"token\\\": \\\"sk-json\\\", \\\"expires_in\\\": "
              "60}\"]\nkey_cmd_refresh = \"50m\"\n\n[[keys]]\nkey = \"sk-static\"\n");
  const KeyConfig& command_key = config.pools.at(0).keys.at(0);
  EXPECT_EQ(command_key.secret.reveal(), "sk-json");
  ASSERT_TRUE(command_key.command);
  EXPECT_EQ(command_key.command->argv.at(0), "/bin/echo");
  EXPECT_EQ(command_key.command->refresh, milliseconds(50 * 60 * 1000));
  EXPECT_TRUE(command_key.command->expires);
  EXPECT_FALSE(config.pools.at(0).keys.at(1).command);
}

TEST(LoadPool, DurationsAcceptStringsAndWholeSeconds) {
  Config config =
      load_ok(std::string("[upstream]\nconnect_timeout = 3\nidle_timeout = \"1.5s\"\n") + k_one_key);
  EXPECT_EQ(config.pools.at(0).upstream.connect_timeout, milliseconds(3000));
  EXPECT_EQ(config.pools.at(0).upstream.idle_timeout, milliseconds(1500));
}

TEST(LoadPool, DrainTimeoutMayBeZeroButTimeoutsMayNot) {
  EXPECT_EQ(load_ok(std::string("[server]\ndrain_timeout = 0\n") + k_one_key).server.drain_timeout,
            milliseconds(0));
  EXPECT_EQ(only_problem(std::string("[upstream]\nconnect_timeout = \"0s\"\n") + k_one_key),
            "keys.toml:2:19: upstream: \"connect_timeout\" must be at least 1ms");
  EXPECT_EQ(only_problem(std::string("[upstream]\nidle_timeout = -1\n") + k_one_key),
            "keys.toml:2:16: upstream: \"idle_timeout\" must be at least 1ms");
}

TEST(LoadPool, SizesAcceptBytesAndBinaryUnits) {
  EXPECT_EQ(load_ok(std::string("[server]\nmax_request_body = 1000\n") + k_one_key).server.max_request_body,
            1000u);
  EXPECT_EQ(
      load_ok(std::string("[server]\nmax_request_body = \"1GiB\"\n") + k_one_key).server.max_request_body,
      1024u * 1024 * 1024);
  EXPECT_EQ(only_problem(std::string("[server]\nmax_request_body = 0\n") + k_one_key),
            "keys.toml:2:20: server: \"max_request_body\" must be at least 1 bytes");
}

TEST(LoadPool, MaxAttemptsIsBounded) {
  EXPECT_EQ(
      load_ok(std::string("[upstream]\nmax_attempts = 1\n") + k_one_key).pools.at(0).upstream.max_attempts,
      1);
  EXPECT_EQ(
      load_ok(std::string("[upstream]\nmax_attempts = 20\n") + k_one_key).pools.at(0).upstream.max_attempts,
      20);
  EXPECT_EQ(only_problem(std::string("[upstream]\nmax_attempts = 0\n") + k_one_key),
            "keys.toml:2:16: upstream: \"max_attempts\" must be at least 1");
  EXPECT_EQ(only_problem(std::string("[upstream]\nmax_attempts = 21\n") + k_one_key),
            "keys.toml:2:16: upstream: \"max_attempts\" must be at most 20");
}

TEST(LoadPool, ClientTokenMustBeNonEmpty) {
  EXPECT_EQ(only_problem(std::string("[server]\nclient_token = \"\"\n") + k_one_key),
            "keys.toml:2:16: server: \"client_token\" is empty");
}

TEST(LoadPool, LabelsDefaultToFingerprintsAndMustBeUnique) {
  Config config = load_ok("[[keys]]\nkey='sk-1'\n[[keys]]\nkey='sk-2'\n");
  EXPECT_EQ(config.pools.at(0).keys[0].label,
            "sk-1~" + config.pools.at(0).keys[0].secret.fingerprint().substr(5));
  EXPECT_NE(config.pools.at(0).keys[0].label, config.pools.at(0).keys[1].label);
}

TEST(LoadPool, ParseErrorHasLineAndColumn) {
  EXPECT_EQ(only_problem("[server]\nlisten = \n"),
            "keys.toml:2:10: invalid TOML: error while parsing key-value pair: expected value, saw "
            "'\\n'");
}

TEST(LoadPool, EmptyFileHasNoKeys) {
  EXPECT_EQ(only_problem(""), "keys.toml: no keys: add a [[keys]] entry");
}

TEST(LoadPool, ReportsAllProblemsAtOnceInFileOrder) {
  ::unsetenv("KEYSHIM_TEST_ALL_UNSET");
  LoadResult result = load(R"([upstream]
strategy = "random"
max_attempts = 0
[server]
listn = "127.0.0.1:1"
[[keys]]
key_env = "KEYSHIM_TEST_ALL_UNSET"
[[keys]]
label = "x"
)");
  ASSERT_FALSE(result.ok());
  ASSERT_EQ(result.problems.size(), 5u) << result.problems_text();
  EXPECT_EQ(result.problems[0].line, 2);
  EXPECT_EQ(result.problems[1].line, 3);
  EXPECT_EQ(result.problems[2].line, 5);
  EXPECT_EQ(result.problems[3].line, 7);
  EXPECT_EQ(result.problems[4].line, 8);
  EXPECT_EQ(result.problems_text().back(), '\n');
}

TEST(LoadPool, NoKeyMaterialAppearsInAnyMessage) {
  ::setenv("KEYSHIM_TEST_BAD_VALUE", "sk-SECRET-env value", 1);
  LoadResult result = load(R"([server]
client_token = "sk-SECRET-token with space"
[[keys]]
key = "sk-SECRET-literal"
[[keys]]
key = "sk-SECRET-literal"
[[keys]]
key_env = "sk-SECRET-pasted-into-key-env"
[[keys]]
kye = "sk-SECRET-typo"
[[keys]]
key = "sk-SECRET-two"
key_cmd = ["printf", "sk-SECRET-cmd"]
[[keys]]
key = "sk-SECRET bad"
[[keys]]
key_env = "KEYSHIM_TEST_BAD_VALUE"
[[keys]]
key_cmd = ["sh", "-c", "echo sk-SECRET-out; exit 2"]
[upstream]
base_url = "https://u:sk-SECRET-url@example.com"
)");
  ASSERT_FALSE(result.ok());
  EXPECT_GE(result.problems.size(), 8u) << result.problems_text();
  EXPECT_EQ(result.problems_text().find("SECRET"), std::string::npos) << result.problems_text();
}

TEST(LoadPool, RelativeCaFileStartsAtThePoolFilesDirectory) {
  keyshim::test::TempDir temp;
  temp.write("corp-ca.pem", keyshim::test::read_file(KEYSHIM_TEST_DATA_DIR "/config/test-ca.pem"));
  std::string path = temp.write("keys.toml", "[[keys]]\nkey = 'sk-1'\nca_file = 'corp-ca.pem'\n");
  LoadResult result = load_pool_file(path);
  ASSERT_TRUE(result.ok()) << result.problems_text();
  EXPECT_EQ(result.config->pools.at(0).keys[0].ca_file, temp.path() + "/corp-ca.pem");
}

TEST(LoadPool, CaFileWithoutACertificateIsReported) {
  keyshim::test::TempDir temp;
  std::string ca = temp.write("ca.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n");
  EXPECT_EQ(only_problem("[upstream]\nca_file = \"" + ca + "\"\n" + k_one_key),
            "keys.toml:2:11: upstream: \"ca_file\" names \"" + ca +
                "\", which holds no PEM certificate; give the CA certificate itself (-----BEGIN "
                "CERTIFICATE-----)");
}

TEST(LoadPool, MissingCaFileIsReported) {
  EXPECT_EQ(only_problem(std::string("[upstream]\nca_file = \"/nonexistent/ca.pem\"\n") + k_one_key),
            "keys.toml:2:11: upstream: \"ca_file\" names \"/nonexistent/ca.pem\", which cannot be "
            "read: no such file or directory");
}

namespace keyshim::config {
namespace {

TEST(LoaderSecrets, SkippingResolutionNeverRunsKeyCommandsOrReadsVariables) {
  test::TempDir dir;
  std::string marker = dir.path() + "/ran";
  std::string text =
      "[[keys]]\nlabel = \"a\"\nkey_cmd = [\"/bin/sh\", \"-c\", \"touch " + marker +
      "; echo sk-from-cmd\"]\n[[keys]]\nlabel = \"b\"\nkey_env = \"KEYSHIM_TEST_SURELY_UNSET_VAR\"\n";
  LoadResult skipped = load_pool_text(text, "keys.toml", SecretResolution::skip);
  ASSERT_TRUE(skipped.ok()) << skipped.problems_text();
  EXPECT_EQ(skipped.config->pools.at(0).keys.size(), 2u);
  EXPECT_TRUE(test::read_file(marker).empty() && !std::ifstream(marker).good()) << "key_cmd ran";
  LoadResult resolved = load_pool_text(text, "keys.toml");
  EXPECT_FALSE(resolved.ok()) << "the unset variable is a problem when resolving";
}

} // namespace
} // namespace keyshim::config

TEST(LoadPool, StateIsOnUnlessTurnedOffAndTakesOnlyABoolean) {
  EXPECT_TRUE(load_ok(k_one_key).server.state);
  EXPECT_FALSE(load_ok(std::string("[server]\nstate = false\n") + k_one_key).server.state);
  EXPECT_EQ(only_problem(std::string("[server]\nstate = \"off\"\n") + k_one_key),
            "keys.toml:2:9: server: \"state\" must be true or false, not a string");
}

TEST(LoadPool, CaptureSettingsAreReadPerPoolAndForTheServer) {
  LoadResult result = load_pool_text(R"([server]
capture_size = 10
capture_body_limit = "1KiB"
[upstream]
capture = "all"
[[keys]]
key = "sk-capture-settings-0001"
[pools.quiet]
capture = "off"
[[pools.quiet.keys]]
key = "sk-capture-settings-0002"
)",
                                     "keys.toml");
  ASSERT_TRUE(result.ok()) << result.problems_text();
  EXPECT_EQ(result.config->server.capture_size, 10);
  EXPECT_EQ(result.config->server.capture_body_limit, 1024u);
  EXPECT_EQ(result.config->pools.at(0).upstream.capture, CaptureMode::all);
  EXPECT_EQ(result.config->pools.at(1).upstream.capture, CaptureMode::off);
}

TEST(LoadPool, ABadCaptureModeIsAnErrorWithItsPositionAndTheChoices) {
  LoadResult result = load_pool_text(
      "[upstream]\ncapture = \"some\"\n[[keys]]\nkey = \"sk-capture-settings-0003\"\n", "keys.toml");
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.problems_text().find("keys.toml:2:"), std::string::npos) << result.problems_text();
  EXPECT_NE(result.problems_text().find("must be one of off, errors or all, not \"some\""), std::string::npos)
      << result.problems_text();
}
