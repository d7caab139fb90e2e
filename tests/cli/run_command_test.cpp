// `keyshim run -- COMMAND` as a black box: the command is a small shell
// script (the fake tool) that prints its environment or calls through
// keyshim with curl to a scripted fake upstream.
#include "run_fixture.hpp"

#include <signal.h>

#include <string>

using namespace keyshim::test::run;
using keyshim::test::ChildProcess;
using keyshim::test::RunOptions;
using keyshim::test::RunResult;

TEST_F(RunCommand, StartsKeyshimForTheCommandAndStopsItAfterwards) {
  ASSERT_TRUE(port_is_free(m_port));
  RunResult r = run({"sh", "-c", k_call_through});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, R"({"ok":true})")) << r.out;
  expect_one_request_with_the_pool_key();
  // Quiet by default: the command owns the terminal.
  EXPECT_FALSE(contains(r.err, "listening")) << r.err;
  // keyshim stopped with the command: nothing listens there any more.
  EXPECT_TRUE(port_is_free(m_port));
  EXPECT_FALSE(contains(r.all_output(), k_key));
}

TEST_F(RunCommand, VerboseLogsTheStartedKeyshim) {
  RunResult r = keyshim::test::run_binary(run_argv({"sh", "-c", k_call_through}, {"-v"}), options());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "keyshim listening on http://127.0.0.1:" + std::to_string(m_port))) << r.err;
  EXPECT_TRUE(contains(r.err, "GET /v1/models")) << r.err;
  EXPECT_FALSE(contains(r.all_output(), k_key));
}

TEST_F(RunCommand, ReusesAKeyshimAlreadyAnsweringOnTheAddress) {
  RunOptions serve_options = options();
  serve_options.timeout = 60s;
  ChildProcess serve = ChildProcess::start({KEYSHIM_BINARY, "serve", "-c", m_path}, serve_options);
  ASSERT_TRUE(wait_until_ready()) << serve.err();

  RunResult r = keyshim::test::run_binary(run_argv({"sh", "-c", k_call_through}, {"-v"}), options());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, R"({"ok":true})")) << r.out;
  expect_one_request_with_the_pool_key();
  // No keyshim of its own, and the running one is still there.
  EXPECT_FALSE(contains(r.err, "listening")) << r.err;
  EXPECT_TRUE(wait_until_ready());

  serve.send_signal(SIGTERM);
  RunResult served = serve.wait();
  EXPECT_EQ(served.exit_code, 0) << served.err;
  EXPECT_TRUE(contains(served.err, "GET /v1/models")) << served.err;
}

TEST_F(RunCommand, ExitCodeIsTheCommands) {
  EXPECT_EQ(run({"sh", "-c", "exit 7"}).exit_code, 7);
  EXPECT_EQ(run({"true"}).exit_code, 0);
  EXPECT_TRUE(port_is_free(m_port));
}

TEST_F(RunCommand, CommandKilledBySignalExitsWith128PlusTheSignal) {
  EXPECT_EQ(run({"sh", "-c", "kill -TERM $$"}).exit_code, 128 + SIGTERM);
}

TEST_F(RunCommand, MissingCommandExits127LikeAShell) {
  RunResult r = run({"keyshim-no-such-command"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_TRUE(contains(r.err, "keyshim: keyshim-no-such-command: not found")) << r.err;
  EXPECT_TRUE(port_is_free(m_port));
}

TEST_F(RunCommand, NonExecutableCommandExits126) {
  std::string script = m_dir.write("not-executable.sh", "#!/bin/sh\nexit 0\n", 0600);
  RunResult r = run({script});
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_TRUE(contains(r.err, "permission denied")) << r.err;
}

TEST_F(RunCommand, CommandEnvironmentHasTheToolVariablesAndNoKeyMaterial) {
  RunResult r = run({"env"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string url = "http://127.0.0.1:" + std::to_string(m_port);
  EXPECT_TRUE(contains(r.out, "KEYSHIM_URL=" + url + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "OPENAI_BASE_URL=" + url + "/v1\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "OPENAI_API_KEY=keyshim\n")) << r.out;
  // The variable key_env reads is not passed on, nor is the key anywhere.
  EXPECT_FALSE(contains(r.out, std::string(k_key_variable) + "=")) << r.out;
  EXPECT_FALSE(contains(r.all_output(), k_key));
}

TEST_F(RunCommand, SignalSentToKeyshimReachesTheCommand) {
  ChildProcess child = ChildProcess::start(
      run_argv({"sh", "-c", "trap 'kill $p; exit 9' TERM; sleep 30 & p=$!; echo ready; wait $p"}), options());
  ASSERT_TRUE(child.wait_for_stdout("ready")) << child.err();
  child.send_signal(SIGTERM);
  RunResult r = child.wait();
  EXPECT_EQ(r.exit_code, 9) << r.err;
  EXPECT_TRUE(port_is_free(m_port));
}

TEST_F(RunCommand, AddressTakenBySomethingElseFailsWithoutRunningTheCommand) {
  // The fake upstream answers /status with something that is not keyshim's.
  write_pool(m_upstream.port());
  RunResult r = run({"sh", "-c", "echo ran"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(contains(r.out, "ran")) << r.out;
  EXPECT_TRUE(
      contains(r.err, "keyshim: error: cannot run sh: 127.0.0.1:" + std::to_string(m_upstream.port())))
      << r.err;
}

// issue 19: SIGUSR1, SIGUSR2 and SIGALRM killed `run` itself and left the
// command running, orphaned. Each is sent only after the command said it
// got the one before. (A signal that reaches sh just before its `wait`
// starts is handled when that wait ends: hence a short sleep to wait on.)
TEST_F(RunCommand, UserSignalsAndAlarmReachTheCommandAndRunExitsWithItsCode) {
  ChildProcess child = ChildProcess::start(
      run_argv({"sh", "-c",
                "trap 'echo got-USR1' USR1; trap 'echo got-USR2' USR2; trap 'echo got-ALRM; done=1' ALRM; "
                "done=0; echo ready; while [ $done = 0 ]; do sleep 1 & p=$!; wait $p; kill $p 2>/dev/null; "
                "done; exit 5"}),
      options());
  ASSERT_TRUE(child.wait_for_stdout("ready")) << child.err();
  child.send_signal(SIGUSR1);
  ASSERT_TRUE(child.wait_for_stdout("got-USR1")) << child.err();
  child.send_signal(SIGUSR2);
  ASSERT_TRUE(child.wait_for_stdout("got-USR2")) << child.err();
  child.send_signal(SIGALRM);
  RunResult r = child.wait();
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_TRUE(contains(r.out, "got-ALRM")) << r.out;
  EXPECT_TRUE(port_is_free(m_port));
}

// A signal keyshim was started with ignored (nohup, `trap '' HUP`) stays
// ignored for the command, as a shell leaves it.
TEST_F(RunCommand, SignalIgnoredAtStartStaysIgnoredForTheCommand) {
  std::string command = std::string("trap '' HUP; exec ") + KEYSHIM_BINARY + " run -c " + m_path +
                        " -- sh -c 'kill -HUP $$; echo survived'";
  RunResult r = keyshim::test::run_binary({"sh", "-c", command}, options());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "survived")) << r.out;
}

#ifdef __linux__
// SIGKILL cannot be forwarded: the command must not outlive keyshim anyway.
TEST_F(RunCommand, CommandDiesWhenKeyshimIsKilled) {
  std::string pid_file = m_dir.path() + "/command.pid";
  ChildProcess child = ChildProcess::start(
      run_argv({"sh", "-c", "echo $$ > " + pid_file + "; echo ready; exec sleep 60"}), options());
  ASSERT_TRUE(child.wait_for_stdout("ready")) << child.err();
  pid_t command = keyshim::test::pid_in(pid_file);
  ASSERT_GT(command, 0);
  child.send_signal(SIGKILL);
  child.wait();
  EXPECT_TRUE(keyshim::test::ends_soon(command));
}
#endif
