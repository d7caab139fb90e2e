#include "config/secret_source.hpp"
#include "support/process_probe.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

using namespace keyshim::config;
using std::chrono::milliseconds;

using keyshim::test::ends_soon;
using keyshim::test::pid_in;

TEST(KeyEnv, ReadsTheVariable) {
  ::setenv("KEYSHIM_TEST_ENV_KEY", "sk-from-env-1", 1);
  SecretOutcome outcome = secret_from_env("KEYSHIM_TEST_ENV_KEY");
  ASSERT_TRUE(outcome.secret) << outcome.error;
  EXPECT_EQ(outcome.secret->reveal(), "sk-from-env-1");
}

TEST(KeyEnv, UnsetVariableIsNamed) {
  ::unsetenv("KEYSHIM_TEST_ENV_UNSET");
  SecretOutcome outcome = secret_from_env("KEYSHIM_TEST_ENV_UNSET");
  EXPECT_FALSE(outcome.secret);
  EXPECT_EQ(outcome.error, "names KEYSHIM_TEST_ENV_UNSET, which is not set");
}

TEST(KeyEnv, EmptyVariableIsAnError) {
  ::setenv("KEYSHIM_TEST_ENV_EMPTY", "", 1);
  EXPECT_EQ(secret_from_env("KEYSHIM_TEST_ENV_EMPTY").error,
            "names KEYSHIM_TEST_ENV_EMPTY, whose value is empty");
}

TEST(KeyEnv, ValueWithWhitespaceIsRefusedWithoutPrintingIt) {
  ::setenv("KEYSHIM_TEST_ENV_SPACE", "sk-secret-value\n", 1);
  SecretOutcome outcome = secret_from_env("KEYSHIM_TEST_ENV_SPACE");
  EXPECT_FALSE(outcome.secret);
  EXPECT_NE(outcome.error.find("whitespace"), std::string::npos);
  EXPECT_EQ(outcome.error.find("sk-secret-value"), std::string::npos);
}

TEST(KeyCmd, TakesTheOutputWithTrailingNewlineTrimmed) {
  SecretOutcome outcome = secret_from_command({"/bin/echo", "sk-from-cmd-1"});
  ASSERT_TRUE(outcome.secret) << outcome.error;
  EXPECT_EQ(outcome.secret->reveal(), "sk-from-cmd-1");
}

TEST(KeyCmd, FindsProgramsOnPathAndTrimsTrailingWhitespace) {
  SecretOutcome outcome = secret_from_command({"printf", "sk-from-cmd-2 \t\r\n\n"});
  ASSERT_TRUE(outcome.secret) << outcome.error;
  EXPECT_EQ(outcome.secret->reveal(), "sk-from-cmd-2");
}

TEST(KeyCmd, TakesOnlyTheFirstLineLikePassShow) {
  SecretOutcome outcome = secret_from_command({"printf", "sk-first-line\nurl: example.com\n"});
  ASSERT_TRUE(outcome.secret) << outcome.error;
  EXPECT_EQ(outcome.secret->reveal(), "sk-first-line");
}

TEST(KeyCmd, RunsWithoutAShell) {
  SecretOutcome outcome = secret_from_command({"/bin/echo", "sk-$HOME;`id`"});
  ASSERT_TRUE(outcome.secret) << outcome.error;
  EXPECT_EQ(outcome.secret->reveal(), "sk-$HOME;`id`");
}

TEST(KeyCmd, StdinIsEmptySoReadingItDoesNotHang) {
  EXPECT_EQ(secret_from_command({"cat"}).error, "runs \"cat\", which printed nothing");
}

TEST(KeyCmd, NonZeroExitIsReportedWithTheStatus) {
  SecretOutcome outcome = secret_from_command({"/bin/false"});
  EXPECT_FALSE(outcome.secret);
  EXPECT_EQ(outcome.error, "runs \"/bin/false\", which exited with status 1");
}

TEST(KeyCmd, FailureNeverShowsTheOutput) {
  SecretOutcome outcome = secret_from_command({"sh", "-c", "echo sk-leaked-secret; exit 3"});
  EXPECT_EQ(outcome.error, "runs \"sh\", which exited with status 3");
}

TEST(KeyCmd, MissingProgramIsReported) {
  SecretOutcome outcome = secret_from_command({"keyshim-no-such-program"});
  EXPECT_EQ(outcome.error,
            "runs \"keyshim-no-such-program\", which could not be started: no such file or directory");
}

TEST(KeyCmd, EmptyOutputIsAnError) {
  EXPECT_EQ(secret_from_command({"true"}).error, "runs \"true\", which printed nothing");
}

TEST(KeyCmd, SlowCommandIsKilledAtTheTimeout) {
  SecretOutcome outcome = secret_from_command({"sleep", "30"}, {milliseconds(100), 64 * 1024});
  EXPECT_FALSE(outcome.secret);
  EXPECT_EQ(outcome.error, "runs \"sleep\", which did not finish within 100ms and was killed");
}

TEST(KeyCmd, CommandThatClosesStdoutButKeepsRunningIsKilledAtTheTimeout) {
  // exec, so the process keyshim kills is the one that holds on.
  SecretOutcome outcome =
      secret_from_command({"sh", "-c", "exec >&- 2>&-; exec sleep 30"}, {milliseconds(100), 64 * 1024});
  EXPECT_NE(outcome.error.find("did not finish within 100ms"), std::string::npos);
}

// issue 9: the grandchild kept the pipe open, so the key failed at the
// timeout although the command had printed it and exited 0.
TEST(KeyCmd, BackgroundJobHoldingStdoutNeitherDelaysTheKeyNorOutlivesIt) {
  keyshim::test::TempDir temp;
  std::string pid_file = temp.path() + "/grandchild.pid";
  auto started = std::chrono::steady_clock::now();
  SecretOutcome outcome =
      secret_from_command({"sh", "-c", "echo sk-from-cmd-grandchild; sleep 30 & echo $! > \"$0\"", pid_file});
  ASSERT_TRUE(outcome.secret) << outcome.error;
  EXPECT_TRUE(outcome.secret->equals("sk-from-cmd-grandchild"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  pid_t grandchild = pid_in(pid_file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(ends_soon(grandchild)) << "the background job outlived the key command";
}

TEST(KeyCmd, TimeoutKillsTheWholeProcessGroup) {
  keyshim::test::TempDir temp;
  std::string pid_file = temp.path() + "/grandchild.pid";
  SecretOutcome outcome = secret_from_command({"sh", "-c", "sleep 30 & echo $! > \"$0\"; sleep 30", pid_file},
                                              {milliseconds(300), 64 * 1024});
  EXPECT_NE(outcome.error.find("did not finish within 300ms"), std::string::npos) << outcome.error;
  pid_t grandchild = pid_in(pid_file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(ends_soon(grandchild)) << "the background job outlived the timeout";
}

TEST(KeyCmd, EndlessOutputIsCutOff) {
  SecretOutcome outcome = secret_from_command({"yes", "sk-x"}, {milliseconds(5000), 1024});
  EXPECT_EQ(outcome.error, "runs \"yes\", which printed more than 1024 bytes");
}

TEST(KeyCmd, DeathBySignalIsReported) {
  SecretOutcome outcome = secret_from_command({"sh", "-c", "kill -9 $$"});
  EXPECT_EQ(outcome.error, "runs \"sh\", which was killed by signal 9");
}

TEST(KeyCmd, OutputThatCannotBeAKeyIsRefusedWithoutEchoingIt) {
  SecretOutcome outcome = secret_from_command({"/bin/echo", "sk-has a-space"});
  EXPECT_FALSE(outcome.secret);
  EXPECT_NE(outcome.error.find("printed a first line that contains whitespace"), std::string::npos);
  EXPECT_EQ(outcome.error.find("sk-has"), std::string::npos);
}

TEST(KeyCmd, JsonOutputGivesTheTokenAndItsExpiry) {
  auto before = std::chrono::system_clock::now();
  SecretOutcome outcome =
      secret_from_command({"printf", "{\n  \"accessToken\": \"eyJ0.from-json\",\n  \"expires_in\": 3600,\n  "
                                     "\"tokenType\": \"Bearer\"\n}\n"});
  ASSERT_TRUE(outcome.secret) << outcome.error;
  EXPECT_EQ(outcome.secret->reveal(), "eyJ0.from-json");
  ASSERT_TRUE(outcome.expires);
  EXPECT_GE(*outcome.expires, before + std::chrono::seconds(3600));
  EXPECT_LE(*outcome.expires, std::chrono::system_clock::now() + std::chrono::seconds(3600));
}

TEST(KeyCmd, JsonWithoutATokenIsRefusedWithoutEchoingIt) {
  SecretOutcome outcome = secret_from_command({"/bin/echo", R"({"acess_token": "sk-leaked-secret"})"});
  EXPECT_FALSE(outcome.secret);
  EXPECT_EQ(outcome.error,
            "runs \"/bin/echo\", which printed JSON without a token (a string \"access_token\", "
            "\"accessToken\" or \"token\")");
}

TEST(KeyCmd, CollectedStderrGivesItsFirstLineAndNeverThePrintedKey) {
  CommandLimits limits;
  limits.collect_stderr = true;
  SecretOutcome outcome = secret_from_command(
      {"sh", "-c", "echo sk-leaked-secret; echo 'ERROR: reauth needed for sk-leaked-secret' >&2; exit 1"},
      limits);
  EXPECT_FALSE(outcome.secret);
  EXPECT_EQ(outcome.error, "runs \"sh\", which exited with status 1");
  EXPECT_EQ(outcome.error_line.rfind("ERROR: reauth needed for sk-l~", 0), 0u) << outcome.error_line;
  EXPECT_EQ(outcome.error_line.find("leaked"), std::string::npos) << outcome.error_line;
}

TEST(KeyCmd, StderrIsLeftAloneUnlessCollected) {
  SecretOutcome outcome = secret_from_command({"sh", "-c", "echo to-the-terminal >&2; exit 2"});
  EXPECT_EQ(outcome.error_line, "");
}
