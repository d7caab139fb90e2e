// `keyshim run -- COMMAND` as a black box: the command is a small shell
// script (the fake tool) that prints its environment or calls through
// keyshim with curl to a scripted fake upstream.
#include "support/http_fake_upstream.hpp"
#include "support/http_raw_client.hpp"
#include "support/process_probe.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using keyshim::test::ChildProcess;
using keyshim::test::FakeUpstream;
using keyshim::test::RunOptions;
using keyshim::test::RunResult;
using keyshim::test::TempDir;

namespace {

using namespace std::chrono_literals;

constexpr const char* k_key = "sk-run-test-key-0123456789";
constexpr const char* k_key_variable = "KEYSHIM_RUN_TEST_KEY";

// The fake tool's call through keyshim, as the OpenAI SDKs make it: the
// base URL and key from the environment. Prints the body it got.
constexpr const char* k_call_through =
    "curl -sS --noproxy '*' -H \"Authorization: Bearer $OPENAI_API_KEY\" \"$OPENAI_BASE_URL/models\"";

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// True when a listener could take `port` now: nothing listens there.
bool port_is_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && listen(fd, 1) == 0;
  close(fd);
  return free;
}

// Let a fake tool waiting in `read line < FIFO` go on. Opening blocks until
// it reads.
void release(const std::string& fifo) {
  int fd = open(fifo.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << fifo;
  EXPECT_EQ(write(fd, "go\n", 3), 3);
  close(fd);
}

std::string fifo_in(const TempDir& dir, const std::string& name) {
  std::string path = dir.path() + "/" + name;
  EXPECT_EQ(mkfifo(path.c_str(), 0600), 0) << path;
  return path;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t found = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++found;
  }
  return found;
}

class RunCommand : public ::testing::Test {
protected:
  void SetUp() override {
    m_port = keyshim::test::unused_loopback_port();
    ASSERT_GT(m_port, 0);
    write_pool(m_port);
  }

  // The pool's key comes from the environment, so the command inherits a
  // variable holding it unless keyshim run removes it.
  void write_pool(int listen_port) {
    m_path = m_dir.write("keys.toml", "[server]\nlisten = \"127.0.0.1:" + std::to_string(listen_port) +
                                          "\"\ndrain_timeout = \"2s\"\n\n[upstream]\nbase_url = \"" +
                                          m_upstream.base_url() +
                                          "\"\nconnect_timeout = \"2s\"\n\n[[keys]]\nlabel = \"only\"\n"
                                          "key_env = \"" +
                                          k_key_variable + "\"\n");
  }

  // Never the developer's own pool file or proxies.
  RunOptions options() const {
    RunOptions options;
    options.env = {{"HOME", m_dir.path()}, {"XDG_RUNTIME_DIR", m_dir.path()}, {k_key_variable, k_key}};
    options.unset_env = {"KEYSHIM_CONFIG", "XDG_CONFIG_HOME", "http_proxy", "HTTP_PROXY",
                         "https_proxy",    "HTTPS_PROXY",     "all_proxy",  "ALL_PROXY"};
    options.timeout = 30s;
    return options;
  }

  std::vector<std::string> run_argv(const std::vector<std::string>& command,
                                    const std::vector<std::string>& flags = {}) const {
    std::vector<std::string> argv = {KEYSHIM_BINARY, "run", "-c", m_path};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }

  RunResult run(const std::vector<std::string>& command) const {
    return keyshim::test::run_binary(run_argv(command), options());
  }

  bool wait_until_ready() const {
    httplib::Client client("127.0.0.1", m_port);
    client.set_connection_timeout(0, 200'000);
    for (int attempt = 0; attempt < 200; ++attempt) {
      if (client.Get("/health")) {
        return true;
      }
      std::this_thread::sleep_for(25ms);
    }
    return false;
  }

  void expect_one_request_with_the_pool_key() const {
    ASSERT_TRUE(m_upstream.wait_for_requests(1, 5s));
    std::vector<keyshim::test::SeenRequest> seen = m_upstream.seen();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].target, "/v1/models");
    EXPECT_EQ(seen[0].header("Authorization"), std::string("Bearer ") + k_key);
  }

  FakeUpstream m_upstream;
  TempDir m_dir;
  int m_port = 0;
  std::string m_path;
};

} // namespace

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
