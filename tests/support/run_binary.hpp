#pragma once
// Run a program (usually the built keyshim) as a black box: argv without a
// shell, environment overrides, stdout and stderr captured, bounded time.
//
//   RunResult r = run_binary({KEYSHIM_BINARY, "check", "-c", path});
//   EXPECT_EQ(r.exit_code, 1);
//
// Long-running children (serve, signal tests) use ChildProcess directly:
//
//   ChildProcess serve = ChildProcess::start({KEYSHIM_BINARY, "serve", "-c", path});
//   ASSERT_TRUE(serve.wait_for_stderr("listening on"));
//   serve.send_signal(SIGTERM);
//   RunResult r = serve.wait();
#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace keyshim::test {

struct RunOptions {
  // Variables to set (or replace) in the child's environment, which is
  // otherwise the test's own.
  std::vector<std::pair<std::string, std::string>> env;
  // Variables to remove from the child's environment.
  std::vector<std::string> unset_env;
  // Working directory for the child; empty: the test's own.
  std::string cwd;
  // Descriptors the child gets as 3, 4, ... (socket activation tests); the
  // caller keeps its own and closes them when it likes.
  std::vector<int> pass_fds;
  // How long wait() lets the child run before killing it with SIGKILL.
  std::chrono::milliseconds timeout{10'000};
};

struct RunResult {
  int exit_code = -1;     // the exit status, or -1 when killed by a signal
  int term_signal = 0;    // the signal that ended it, if any
  bool timed_out = false; // killed because RunOptions::timeout ran out
  std::string out;        // everything written to stdout
  std::string err;        // everything written to stderr

  // stdout + stderr, for "no key byte appears anywhere" assertions.
  std::string all_output() const { return out + err; }
};

class ChildProcess {
public:
  // Start `argv` (argv[0] is a path, or a name looked up in PATH) with stdin
  // from /dev/null. Throws std::runtime_error when it cannot be started.
  static ChildProcess start(const std::vector<std::string>& argv, const RunOptions& options = {});

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills the child (SIGKILL) if it is still running.
  ~ChildProcess();

  pid_t pid() const { return m_pid; }
  void send_signal(int sig) const;

  // Read output until `needle` has appeared on stderr (or stdout), the
  // streams close, or `timeout` passes. True when it appeared.
  bool wait_for_stderr(const std::string& needle,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10));
  bool wait_for_stdout(const std::string& needle,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // Output captured so far.
  const std::string& out() const { return m_out; }
  const std::string& err() const { return m_err; }

  // Wait for the child to exit (killing it when RunOptions::timeout, counted
  // from start, runs out) and return everything it wrote. Call it once.
  RunResult wait();

private:
  ChildProcess() = default;
  // Read whatever is available until `deadline`; stops early once `done()` is true.
  template <typename Done> void pump(std::chrono::steady_clock::time_point deadline, Done done);
  bool wait_for(const std::string& stream, const std::string& needle, std::chrono::milliseconds timeout);

  pid_t m_pid = -1;
  int m_out_fd = -1;
  int m_err_fd = -1;
  std::string m_out;
  std::string m_err;
  std::chrono::steady_clock::time_point m_deadline;
  bool m_reaped = false;
};

// Start `argv`, wait for it to exit, return its output and exit code.
RunResult run_binary(const std::vector<std::string>& argv, const RunOptions& options = {});

} // namespace keyshim::test
