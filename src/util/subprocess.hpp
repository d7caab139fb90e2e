#pragma once
// Running a program directly and waiting for it: argv[0] looked up in PATH,
// no shell (no argument is ever re-parsed), an optional deadline, stdout
// captured up to a cap. The one way keyshim starts a helper program: key_cmd
// (config) and systemctl/launchctl (service).
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::util {

struct SubprocessOptions {
  // true: stdin is /dev/null and stdout is read into the result's `output`.
  // false: the child shares keyshim's stdin, stdout and stderr (the terminal).
  bool capture = true;
  // With `capture`: stderr goes into `output` too. Otherwise it is keyshim's.
  bool capture_stderr = false;
  // With `capture` and not `capture_stderr`: stderr goes into `errors`
  // instead of keyshim's, its first `max_errors` bytes kept (the rest is
  // read and dropped, so a chatty command never blocks on a full pipe).
  bool collect_stderr = false;
  std::size_t max_errors = 4096;
  // With `capture`: more output than this stops the command (`over_cap`).
  std::size_t max_output = 1024 * 1024;
  // The command is killed when it runs longer than this; none: no deadline.
  std::optional<std::chrono::milliseconds> timeout;
  // In its own process group, every process the command started is killed
  // with it: on timeout or over the cap, and whatever is left when it exits
  // (a background job). Without, it stays in keyshim's process group, and so
  // in the terminal's foreground job (Ctrl-C reaches it, a password prompt
  // can read the terminal).
  bool own_process_group = false;
};

struct SubprocessResult {
  int start_error = 0;          // errno when it could not be started (ENOENT: not found)
  bool timed_out = false;       // killed at the deadline
  bool over_cap = false;        // killed for printing more than max_output bytes
  std::optional<int> exit_code; // when it exited on its own
  int signal = 0;               // the signal that ended it (SIGKILL after a timeout), 0 if none
  std::string output;           // stdout (and stderr) when captured; at most max_output + 4 KiB
  std::string errors;           // stderr with `collect_stderr`; at most max_errors bytes

  bool started() const { return start_error == 0; }
  // Started, exited by itself with status 0.
  bool succeeded() const { return started() && !timed_out && !over_cap && exit_code == 0; }
};

// Run `argv` (not empty) and wait for it. The child gets an empty signal mask,
// default signal handlers, and no descriptor of keyshim's but 0, 1 and 2 (a
// listening socket must not outlive keyshim in a grandchild). The run ends
// when the command exits, even when a grandchild still holds its stdout open:
// what the command printed before exiting is read, a grandchild's later
// output is not. Blocks the calling thread.
SubprocessResult run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& options);

} // namespace keyshim::util
