#include "util/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <cerrno>
#include <limits>

extern char** environ;

namespace keyshim::util {
namespace {

using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often a running command is checked for having exited. Its exit does
// not close the pipe when a grandchild (`sleep 30 &`) holds a copy.
constexpr int k_exit_check_ms = 10;

// Output up to this size is never moved by a reallocation, which would leave
// a copy of it (a key, for key_cmd) in freed memory.
constexpr std::size_t k_reserved_output = 64 * 1024;

// The posix_spawn file actions and attributes for one run.
class SpawnSetup {
public:
  SpawnSetup(const SubprocessOptions& options, int out_write, int err_write) {
    posix_spawn_file_actions_init(&m_actions);
    posix_spawnattr_init(&m_attributes);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (options.capture) {
      posix_spawn_file_actions_addopen(&m_actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_adddup2(&m_actions, out_write, STDOUT_FILENO);
      if (options.capture_stderr) {
        posix_spawn_file_actions_adddup2(&m_actions, out_write, STDERR_FILENO);
      } else if (err_write != -1) {
        posix_spawn_file_actions_adddup2(&m_actions, err_write, STDERR_FILENO);
      }
    }
    close_other_descriptors(options, flags);
    // Undo what a daemon set up for itself: blocked signals (the signal
    // watcher's mask is inherited) and ignored ones (SIGPIPE).
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&m_attributes, &none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int sig : {SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGCHLD}) {
      sigaddset(&defaults, sig);
    }
    posix_spawnattr_setsigdefault(&m_attributes, &defaults);
    if (options.own_process_group) {
      posix_spawnattr_setpgroup(&m_attributes, 0);
      flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&m_attributes, flags);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&m_actions);
    posix_spawnattr_destroy(&m_attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  const posix_spawn_file_actions_t* actions() const { return &m_actions; }
  const posix_spawnattr_t* attributes() const { return &m_attributes; }

private:
  // Descriptors keyshim opened without close-on-exec (a socket, a log file)
  // must not reach the command: only 0, 1 and 2 do.
  void close_other_descriptors([[maybe_unused]] const SubprocessOptions& options,
                               [[maybe_unused]] short& flags) {
#if defined(__APPLE__)
    flags |= POSIX_SPAWN_CLOEXEC_DEFAULT; // closes all but what the actions name
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
      bool replaced =
          options.capture && (fd != STDERR_FILENO || options.capture_stderr || options.collect_stderr);
      if (!replaced) {
        posix_spawn_file_actions_addinherit_np(&m_actions, fd);
      }
    }
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    posix_spawn_file_actions_addclosefrom_np(&m_actions, STDERR_FILENO + 1);
#endif
    // Elsewhere only keyshim's own close-on-exec flags apply.
  }

  posix_spawn_file_actions_t m_actions{};
  posix_spawnattr_t m_attributes{};
};

int wait_ms(steady::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - steady::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, k_exit_check_ms));
}

// Whether `pid` has exited, without reaping it: a zombie keeps its pid, and so
// its process group id, from being reused until we kill the group.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno != EINTR) {
      return true; // ECHILD: already reaped (SIGCHLD ignored)
    }
  }
  return info.si_pid == pid;
}

enum class PipeState { open, closed, full };

// Everything in the non-blocking pipe right now.
PipeState read_available(int fd, std::string& output, std::size_t max_output) {
  char buffer[4096];
  PipeState state = PipeState::open;
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      output.append(buffer, static_cast<std::size_t>(got));
      if (output.size() > max_output) {
        state = PipeState::full;
        break;
      }
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      state = got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? PipeState::open : PipeState::closed;
      break;
    }
  }
  OPENSSL_cleanse(buffer, sizeof buffer);
  return state;
}

// Everything in the non-blocking stderr pipe right now: the first `keep`
// bytes are kept, the rest dropped, so the command never waits on us.
PipeState drain_errors(int fd, std::string& errors, std::size_t keep) {
  std::string chunk;
  PipeState state = read_available(fd, chunk, std::numeric_limits<std::size_t>::max());
  errors.append(chunk, 0, keep - std::min(keep, errors.size()));
  return state;
}

// The descriptors a wait polls: the pipes still open.
nfds_t readable_pipes(pollfd (&fds)[2], int out, bool out_open, int err, bool err_open) {
  nfds_t count = 0;
  if (out_open) {
    fds[count++] = pollfd{out, POLLIN, 0};
  }
  if (err_open) {
    fds[count++] = pollfd{err, POLLIN, 0};
  }
  return count;
}

// Wait for the command to exit, reading its output (`fd`, -1 when not
// captured) and its collected stderr (`err_fd`, -1 when not collected)
// meanwhile; give up at the deadline or over the cap. The wait ends with the
// command, not with the pipes: what it wrote before exiting is already in them.
void watch(pid_t pid, int fd, int err_fd, const SubprocessOptions& options, SubprocessResult& result) {
  auto deadline = options.timeout ? steady::now() + *options.timeout : steady::time_point::max();
  bool pipe_open = fd != -1;
  bool errors_open = err_fd != -1;
  for (;;) {
    bool exited = has_exited(pid);
    if (pipe_open) {
      PipeState state = read_available(fd, result.output, options.max_output);
      if (state == PipeState::full) {
        result.over_cap = true;
        return;
      }
      pipe_open = state == PipeState::open;
    }
    if (errors_open) {
      errors_open = drain_errors(err_fd, result.errors, options.max_errors) == PipeState::open;
    }
    if (exited) {
      return;
    }
    if (steady::now() >= deadline) {
      result.timed_out = true;
      return;
    }
    pollfd fds[2];
    ::poll(fds, readable_pipes(fds, fd, pipe_open, err_fd, errors_open), wait_ms(deadline));
  }
}

// Kill what must not outlive the run (the command when it was stopped, the
// rest of its own process group in any case), then reap the command.
void end(pid_t pid, const SubprocessOptions& options, SubprocessResult& result) {
  bool stopped = result.timed_out || result.over_cap;
  if (options.own_process_group) {
    ::kill(-pid, SIGKILL);
  } else if (stopped) {
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (reaped != pid) {
    return; // its status is lost (SIGCHLD ignored): neither exit code nor signal
  }
  if (WIFEXITED(status) && !stopped) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
}

pid_t spawn(const std::vector<std::string>& argv, const SubprocessOptions& options, int out_write,
            int err_write, SubprocessResult& result) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  SpawnSetup setup(options, out_write, err_write);
  pid_t pid = 0;
  result.start_error =
      ::posix_spawnp(&pid, args[0], setup.actions(), setup.attributes(), args.data(), environ);
  return result.start_error == 0 ? pid : -1;
}

// pipe() + FD_CLOEXEC rather than pipe2(): macOS has no pipe2. Close-on-exec
// keeps the ends out of a program another thread starts meanwhile. The
// reading end does not block: the watch polls it.
bool open_pipe(int (&fds)[2], SubprocessResult& result) {
  if (::pipe(fds) != 0) {
    result.start_error = errno;
    return false;
  }
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return true;
}

void close_end(int& fd) {
  if (fd != -1) {
    ::close(fd);
    fd = -1;
  }
}

void close_pipe(int (&fds)[2]) {
  close_end(fds[0]);
  close_end(fds[1]);
}

} // namespace

SubprocessResult run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& options) {
  SubprocessResult result;
  if (argv.empty()) {
    result.start_error = EINVAL;
    return result;
  }
  int fds[2] = {-1, -1};
  int err_fds[2] = {-1, -1};
  if (options.capture) {
    if (!open_pipe(fds, result)) {
      return result;
    }
    result.output.reserve(std::min(options.max_output, k_reserved_output) + 4096);
    if (options.collect_stderr && !options.capture_stderr && !open_pipe(err_fds, result)) {
      close_pipe(fds);
      return result;
    }
  }
  pid_t pid = spawn(argv, options, fds[1], err_fds[1], result);
  close_end(fds[1]);
  close_end(err_fds[1]);
  if (pid > 0) {
    if (fds[0] != -1 || options.timeout) {
      watch(pid, fds[0], err_fds[0], options, result);
    }
    end(pid, options, result);
  }
  close_end(fds[0]);
  close_end(err_fds[0]);
  return result;
}

} // namespace keyshim::util
