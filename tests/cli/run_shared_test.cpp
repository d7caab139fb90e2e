// Several `keyshim run`s on one address: the keyshim the first started
// serves them all until the last exits, and a run still using it serves the
// address itself when the run serving it goes; `keyshim reload` leaves it
// alone. Fifos sequence the fake tools; nothing waits on a clock.
#include "run_fixture.hpp"

#include <signal.h>

#include <string>

using namespace keyshim::test::run;
using keyshim::test::ChildProcess;
using keyshim::test::RunResult;

// issue 19: the second of two runs used the keyshim the first started, and
// got connection refused once the first tool exited. The first run now
// serves until the second is done. Fifos sequence the two fake tools.
TEST_F(RunCommand, KeyshimStartedByOneRunServesAnotherAfterTheFirstCommandExits) {
  std::string first_go = fifo_in(m_dir, "first-go");
  std::string second_go = fifo_in(m_dir, "second-go");
  ChildProcess first = ChildProcess::start(
      run_argv({"sh", "-c", "echo started; read line < " + first_go + "; echo first-done"}), options());
  ASSERT_TRUE(first.wait_for_stdout("started")) << first.err();
  ChildProcess second =
      ChildProcess::start(run_argv({"sh", "-c",
                                    std::string(k_call_through) + "; echo; echo attached; read line < " +
                                        second_go + "; " + k_call_through + "; echo; echo second-done"}),
                          options());
  ASSERT_TRUE(second.wait_for_stdout("attached")) << second.err();

  // The first tool exits; its run keeps the keyshim for the second.
  release(first_go);
  ASSERT_TRUE(first.wait_for_stderr("until the other `keyshim run` using it exit")) << first.err();
  EXPECT_FALSE(port_is_free(m_port));
  release(second_go);
  RunResult second_result = second.wait();
  EXPECT_EQ(second_result.exit_code, 0) << second_result.err;
  EXPECT_EQ(count(second_result.out, R"({"ok":true})"), 2u) << second_result.out;
  EXPECT_TRUE(contains(second_result.out, "second-done")) << second_result.out;

  // Then the first run drains and exits with its own command's code.
  RunResult first_result = first.wait();
  EXPECT_EQ(first_result.exit_code, 0) << first_result.err;
  EXPECT_TRUE(port_is_free(m_port));
  EXPECT_EQ(m_upstream.seen().size(), 2u);
  EXPECT_FALSE(contains(first_result.all_output() + second_result.all_output(), k_key));
}

// The run that started the keyshim is killed while another run uses it:
// that run notices within a second and serves the address itself.
TEST_F(RunCommand, RunUsingAKeyshimWhoseRunWasKilledServesTheAddressItself) {
  std::string second_go = fifo_in(m_dir, "second-go");
  ChildProcess first = ChildProcess::start(run_argv({"sh", "-c", "echo started; exec sleep 60"}), options());
  ASSERT_TRUE(first.wait_for_stdout("started")) << first.err();
  ChildProcess second =
      ChildProcess::start(run_argv({"sh", "-c",
                                    std::string(k_call_through) + "; echo; echo attached; read line < " +
                                        second_go + "; " + k_call_through + "; echo; echo second-done"}),
                          options());
  ASSERT_TRUE(second.wait_for_stdout("attached")) << second.err();

  first.send_signal(SIGKILL);
  first.wait();
  ASSERT_TRUE(second.wait_for_stderr("that another `keyshim run` started is gone: serving it from this run"))
      << second.err();
  release(second_go);
  RunResult result = second.wait();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(count(result.out, R"({"ok":true})"), 2u) << result.out;
  EXPECT_TRUE(port_is_free(m_port));
  EXPECT_FALSE(contains(result.all_output(), k_key));
}

// `keyshim run` passes SIGHUP on to its command: `keyshim reload` must not
// send it one meaning a reload.
TEST_F(RunCommand, ReloadLeavesAKeyshimStartedByRunAlone) {
  std::string go = fifo_in(m_dir, "go");
  ChildProcess child = ChildProcess::start(
      run_argv({"sh", "-c", "trap 'echo got-HUP' HUP; echo started; read line < " + go + "; echo done"}),
      options());
  ASSERT_TRUE(child.wait_for_stdout("started")) << child.err();
  RunResult reload = keyshim::test::run_binary({KEYSHIM_BINARY, "reload", "-c", m_path}, options());
  EXPECT_EQ(reload.exit_code, 1);
  EXPECT_TRUE(contains(reload.err, "was started by `keyshim run`")) << reload.err;
  release(go);
  RunResult r = child.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "got-HUP")) << r.out;
}

// Ctrl-C stops a run that serves others after its command exited; a run
// still using its keyshim then serves the address itself.
TEST_F(RunCommand, InterruptedOwnerHandsTheAddressToARunStillUsingIt) {
  std::string first_go = fifo_in(m_dir, "first-go");
  std::string second_go = fifo_in(m_dir, "second-go");
  ChildProcess first =
      ChildProcess::start(run_argv({"sh", "-c", "echo started; read line < " + first_go}), options());
  ASSERT_TRUE(first.wait_for_stdout("started")) << first.err();
  ChildProcess second =
      ChildProcess::start(run_argv({"sh", "-c",
                                    std::string(k_call_through) + "; echo; echo attached; read line < " +
                                        second_go + "; " + k_call_through + "; echo; echo second-done"}),
                          options());
  ASSERT_TRUE(second.wait_for_stdout("attached")) << second.err();
  release(first_go);
  ASSERT_TRUE(first.wait_for_stderr("until the other `keyshim run` using it exit")) << first.err();

  first.send_signal(SIGINT);
  RunResult first_result = first.wait();
  EXPECT_EQ(first_result.exit_code, 0) << first_result.err;
  ASSERT_TRUE(second.wait_for_stderr("is gone: serving it from this run")) << second.err();
  release(second_go);
  RunResult result = second.wait();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(count(result.out, R"({"ok":true})"), 2u) << result.out;
}
