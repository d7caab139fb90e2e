#include "service/command_runner.hpp"

#include <gtest/gtest.h>

using namespace keyshim::service;

TEST(CommandRunner, PassesArgumentsWithoutAShell) {
  // Spaces, quotes and $ reach the program as they are: nothing re-parses them.
  CommandResult result =
      run_command_captured({"sh", "-c", "printf '%s|' \"$@\"", "sh", "a b", "c'd", "$HOME", ""});
  ASSERT_TRUE(result.ok()) << result.describe();
  EXPECT_EQ(result.output, "a b|c'd|$HOME||");
}

TEST(CommandRunner, ReportsTheExitStatus) {
  CommandResult result = run_command({"sh", "-c", "exit 3"});
  EXPECT_TRUE(result.started);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.describe(), "exit 3");
}

TEST(CommandRunner, ReportsAKillingSignal) {
  CommandResult result = run_command({"sh", "-c", "kill -9 $$"});
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.signal, 9);
  EXPECT_EQ(result.describe(), "killed by signal 9");
}

TEST(CommandRunner, AMissingProgramDoesNotStart) {
  CommandResult result = run_command({"keyshim-no-such-program-xyz", "--user"});
  EXPECT_FALSE(result.started);
  EXPECT_EQ(result.describe(), "not found");
}

TEST(CommandRunner, CapturesStdoutAndStderrTogether) {
  CommandResult result = run_command_captured({"sh", "-c", "echo out; echo err >&2"});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.output, "out\nerr\n");
}

TEST(ShellCommandText, QuotesOnlyWhatAShellWouldSplitOrExpand) {
  EXPECT_EQ(shell_command_text({"systemctl", "--user", "enable", "keyshim.service"}),
            "systemctl --user enable keyshim.service");
  EXPECT_EQ(shell_command_text({"launchctl", "bootstrap", "gui/501", "/Users/u/My Agents/x.plist"}),
            "launchctl bootstrap gui/501 '/Users/u/My Agents/x.plist'");
  EXPECT_EQ(shell_command_text({"echo", "it's", "$HOME", ""}), "echo 'it'\\''s' '$HOME' ''");
}
