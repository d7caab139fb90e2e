#include "util/subprocess.hpp"

#include "support/process_probe.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

using namespace keyshim::util;
using keyshim::test::ends_soon;
using keyshim::test::is_running;
using keyshim::test::pid_in;
using std::chrono::milliseconds;

namespace {

SubprocessOptions with_timeout(milliseconds timeout, bool own_group) {
  SubprocessOptions options;
  options.timeout = timeout;
  options.own_process_group = own_group;
  return options;
}

// A shell command that reports whether it leads its own process group.
const std::vector<std::string> k_group_probe = {"sh", "-c",
                                                "read -r pid comm state ppid pgid rest < /proc/$$/stat; [ "
                                                "\"$pgid\" = \"$$\" ] && echo own || echo shared"};

} // namespace

TEST(Subprocess, ReportsTheExitCode) {
  SubprocessResult run = run_subprocess({"sh", "-c", "exit 7"}, {});
  EXPECT_TRUE(run.started());
  EXPECT_EQ(run.exit_code, 7);
  EXPECT_EQ(run.signal, 0);
  EXPECT_FALSE(run.succeeded());
}

TEST(Subprocess, ReportsTheSignalThatEndedIt) {
  SubprocessResult run = run_subprocess({"sh", "-c", "kill -TERM $$"}, {});
  EXPECT_EQ(run.signal, SIGTERM);
  EXPECT_FALSE(run.exit_code);
  EXPECT_FALSE(run.timed_out);
  EXPECT_FALSE(run.succeeded());
}

TEST(Subprocess, AMissingProgramDoesNotStart) {
  SubprocessResult run = run_subprocess({"keyshim-no-such-program-xyz"}, {});
  EXPECT_FALSE(run.started());
  EXPECT_EQ(run.start_error, ENOENT);
}

TEST(Subprocess, CapturesStdoutAndStderrOnlyWhenAsked) {
  SubprocessResult plain = run_subprocess({"sh", "-c", "echo out; echo err >&2"}, {});
  EXPECT_EQ(plain.output, "out\n");
  SubprocessOptions both;
  both.capture_stderr = true;
  SubprocessResult merged = run_subprocess({"sh", "-c", "echo out; echo err >&2"}, both);
  EXPECT_EQ(merged.output, "out\nerr\n");
}

TEST(Subprocess, CollectsStderrApartFromStdout) {
  SubprocessOptions options;
  options.collect_stderr = true;
  SubprocessResult run = run_subprocess({"sh", "-c", "echo out; echo err >&2; exit 3"}, options);
  EXPECT_EQ(run.output, "out\n");
  EXPECT_EQ(run.errors, "err\n");
  EXPECT_EQ(run.exit_code, 3);
}

TEST(Subprocess, KeepsTheStartOfALongStderrAndNeverBlocksOnIt) {
  SubprocessOptions options = with_timeout(milliseconds(5000), true);
  options.collect_stderr = true;
  options.max_errors = 10;
  // 1 MiB on stderr would fill the pipe and hang a command nobody reads.
  SubprocessResult run = run_subprocess(
      {"sh", "-c", "echo first-line-of-it >&2; head -c 1048576 /dev/zero >&2; echo done"}, options);
  EXPECT_FALSE(run.timed_out);
  EXPECT_TRUE(run.succeeded());
  EXPECT_EQ(run.errors, "first-line");
  EXPECT_EQ(run.output, "done\n");
}

TEST(Subprocess, StdinIsEmptySoReadingItDoesNotHang) {
  SubprocessResult run = run_subprocess({"cat"}, with_timeout(milliseconds(5000), true));
  EXPECT_FALSE(run.timed_out);
  EXPECT_TRUE(run.succeeded());
  EXPECT_EQ(run.output, "");
}

TEST(Subprocess, OutputOverTheCapStopsTheCommand) {
  SubprocessOptions options = with_timeout(milliseconds(5000), true);
  options.max_output = 1024;
  SubprocessResult run = run_subprocess({"yes", "over the cap"}, options);
  EXPECT_TRUE(run.over_cap);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.signal, SIGKILL);
  EXPECT_GT(run.output.size(), 1024U);
  EXPECT_LE(run.output.size(), 1024U + 4096U);
}

TEST(Subprocess, TimeoutKillsTheWholeOwnProcessGroup) {
  keyshim::test::TempDir temp;
  std::string pid_file = temp.path() + "/background.pid";
  SubprocessResult run = run_subprocess({"sh", "-c", "sleep 30 & echo $! > \"$0\"; sleep 30", pid_file},
                                        with_timeout(milliseconds(300), true));
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(run.signal, SIGKILL);
  EXPECT_FALSE(run.exit_code);
  pid_t background = pid_in(pid_file);
  ASSERT_GT(background, 0);
  EXPECT_TRUE(ends_soon(background)) << "the background job outlived the timeout";
}

TEST(Subprocess, TimeoutKillsTheCommandInKeyshimsProcessGroup) {
  // exec, so the process killed is the one that holds on.
  SubprocessResult run =
      run_subprocess({"sh", "-c", "exec sleep 30"}, with_timeout(milliseconds(200), false));
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(run.signal, SIGKILL);
}

// issue 9: a background job holding stdout open made a finished command wait
// for the deadline.
TEST(Subprocess, BackgroundJobHoldingStdoutDoesNotDelayTheEnd) {
  keyshim::test::TempDir temp;
  std::string pid_file = temp.path() + "/background.pid";
  auto started = std::chrono::steady_clock::now();
  SubprocessResult run = run_subprocess({"sh", "-c", "echo printed; sleep 30 & echo $! > \"$0\"", pid_file},
                                        with_timeout(milliseconds(20'000), true));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_FALSE(run.timed_out);
  EXPECT_TRUE(run.succeeded());
  EXPECT_EQ(run.output, "printed\n");
  pid_t background = pid_in(pid_file);
  ASSERT_GT(background, 0);
  EXPECT_TRUE(ends_soon(background)) << "the background job outlived its own process group's command";
}

TEST(Subprocess, WithoutOwnGroupABackgroundJobIsLeftAloneButDoesNotDelayTheEnd) {
  keyshim::test::TempDir temp;
  std::string pid_file = temp.path() + "/background.pid";
  SubprocessResult run = run_subprocess({"sh", "-c", "echo printed; sleep 30 & echo $! > \"$0\"", pid_file},
                                        with_timeout(milliseconds(20'000), false));
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.output, "printed\n");
  pid_t background = pid_in(pid_file);
  ASSERT_GT(background, 0);
  EXPECT_TRUE(is_running(background));
  ::kill(background, SIGKILL);
}

TEST(Subprocess, OwnProcessGroupIsAnOption) {
  EXPECT_EQ(run_subprocess(k_group_probe, with_timeout(milliseconds(5000), true)).output, "own\n");
  EXPECT_EQ(run_subprocess(k_group_probe, with_timeout(milliseconds(5000), false)).output, "shared\n");
}

TEST(Subprocess, DescriptorsWithoutCloseOnExecAreNotInherited) {
  int leaked = ::open("/dev/null", O_RDONLY); // deliberately without O_CLOEXEC
  ASSERT_GE(leaked, 3);
  std::string probe = "[ -e /proc/$$/fd/" + std::to_string(leaked) + " ] && echo open || echo closed";
  SubprocessResult run = run_subprocess({"sh", "-c", probe}, {});
  ::close(leaked);
  EXPECT_EQ(run.output, "closed\n");
}

TEST(Subprocess, UncapturedRunSharesTheTerminalAndReportsTheExit) {
  SubprocessOptions options;
  options.capture = false;
  SubprocessResult run = run_subprocess({"sh", "-c", "exit 4"}, options);
  EXPECT_EQ(run.exit_code, 4);
  EXPECT_EQ(run.output, "");
}
