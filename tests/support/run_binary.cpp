#include "support/run_binary.hpp"

#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace keyshim::test {
namespace {

using steady = std::chrono::steady_clock;

int poll_timeout_ms(steady::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

// Where a child keeps its state file (`state = true` is the default): never
// the user's, and a directory of its own, so that no test (nor a test run
// after it in the same process) starts from another's key health. A test
// that restarts keyshim to see what it kept sets XDG_STATE_HOME itself.
std::string fresh_state_home() {
  static const TempDir dir;
  static std::atomic<int> children{0};
  return dir.path() + "/" + std::to_string(++children);
}

// The test's environment with the overrides applied, as "NAME=value" strings.
std::vector<std::string> child_environment(const RunOptions& options) {
  auto replaced = [&](const std::string& entry) {
    std::string name = entry.substr(0, entry.find('='));
    bool unset =
        std::find(options.unset_env.begin(), options.unset_env.end(), name) != options.unset_env.end();
    bool overridden = std::any_of(options.env.begin(), options.env.end(),
                                  [&](const auto& pair) { return pair.first == name; });
    return unset || overridden;
  };
  const bool own_state_home = !replaced("XDG_STATE_HOME=");
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!replaced(*entry) && !(own_state_home && std::string_view(*entry).starts_with("XDG_STATE_HOME="))) {
      env.emplace_back(*entry);
    }
  }
  for (const auto& [name, value] : options.env) {
    env.push_back(name + "=" + value);
  }
  if (own_state_home) {
    env.push_back("XDG_STATE_HOME=" + fresh_state_home());
  }
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

void make_pipe(int fds[2]) {
  if (::pipe(fds) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
}

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

} // namespace

ChildProcess ChildProcess::start(const std::vector<std::string>& argv, const RunOptions& options) {
  if (argv.empty()) {
    throw std::invalid_argument("ChildProcess::start: empty argv");
  }
  int out_pipe[2];
  int err_pipe[2];
  make_pipe(out_pipe);
  make_pipe(err_pipe);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  if (!options.cwd.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  }
  // Each passed descriptor goes through a copy above the target numbers:
  // dup2(3, 3) would not clear close-on-exec, and a later target must not
  // overwrite a source still to be copied.
  std::vector<int> copies;
  for (std::size_t i = 0; i < options.pass_fds.size(); ++i) {
    copies.push_back(::fcntl(options.pass_fds[i], F_DUPFD_CLOEXEC, 100));
    posix_spawn_file_actions_adddup2(&actions, copies.back(), 3 + static_cast<int>(i));
  }
  // The child starts with default signal handling even if the test runner
  // blocks or ignores signals (signal tests depend on it).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  sigset_t defaults;
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> args = argv;
  std::vector<std::string> env = child_environment(options);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);

  ChildProcess child;
  int error =
      ::posix_spawnp(&child.m_pid, args[0].c_str(), &actions, &attributes, c_args.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  for (int copy : copies) {
    ::close(copy);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (error != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    child.m_pid = -1;
    child.m_reaped = true;
    throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(error));
  }
  child.m_out_fd = out_pipe[0];
  child.m_err_fd = err_pipe[0];
  child.m_deadline = steady::now() + options.timeout;
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)), m_out_fd(std::exchange(other.m_out_fd, -1)),
      m_err_fd(std::exchange(other.m_err_fd, -1)), m_out(std::move(other.m_out)),
      m_err(std::move(other.m_err)), m_deadline(other.m_deadline),
      m_reaped(std::exchange(other.m_reaped, true)) {
}

ChildProcess::~ChildProcess() {
  if (m_pid > 0 && !m_reaped) {
    ::kill(m_pid, SIGKILL);
    int status = 0;
    ::waitpid(m_pid, &status, 0);
  }
  close_fd(m_out_fd);
  close_fd(m_err_fd);
}

void ChildProcess::send_signal(int sig) const {
  if (m_pid > 0 && !m_reaped) {
    ::kill(m_pid, sig);
  }
}

template <typename Done> void ChildProcess::pump(steady::time_point deadline, Done done) {
  while ((m_out_fd >= 0 || m_err_fd >= 0) && !done()) {
    pollfd fds[2] = {{m_out_fd, POLLIN, 0}, {m_err_fd, POLLIN, 0}};
    int ready = ::poll(fds, 2, poll_timeout_ms(deadline));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      if (steady::now() >= deadline) {
        return;
      }
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) {
        continue;
      }
      char buffer[8192];
      ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) {
        continue;
      }
      int& fd = i == 0 ? m_out_fd : m_err_fd;
      if (got <= 0) {
        close_fd(fd);
      } else {
        (i == 0 ? m_out : m_err).append(buffer, static_cast<std::size_t>(got));
      }
    }
  }
}

bool ChildProcess::wait_for(const std::string& captured, const std::string& needle,
                            std::chrono::milliseconds timeout) {
  auto found = [&] { return captured.find(needle) != std::string::npos; };
  pump(steady::now() + timeout, found);
  return found();
}

bool ChildProcess::wait_for_stderr(const std::string& needle, std::chrono::milliseconds timeout) {
  return wait_for(m_err, needle, timeout);
}

bool ChildProcess::wait_for_stdout(const std::string& needle, std::chrono::milliseconds timeout) {
  return wait_for(m_out, needle, timeout);
}

RunResult ChildProcess::wait() {
  RunResult result;
  pump(m_deadline, [] { return false; });
  int status = 0;
  bool exited = false;
  while (!m_reaped && !exited) {
    pid_t done = ::waitpid(m_pid, &status, WNOHANG);
    if (done == m_pid || (done < 0 && errno != EINTR)) {
      exited = true;
    } else if (steady::now() >= m_deadline) {
      break;
    } else {
      // The child closed its output but has not exited yet.
      ::poll(nullptr, 0, 5);
    }
  }
  if (!m_reaped && !exited) {
    result.timed_out = true;
    ::kill(m_pid, SIGKILL);
    ::waitpid(m_pid, &status, 0);
  }
  m_reaped = true;
  close_fd(m_out_fd);
  close_fd(m_err_fd);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  result.out = m_out;
  result.err = m_err;
  return result;
}

RunResult run_binary(const std::vector<std::string>& argv, const RunOptions& options) {
  return ChildProcess::start(argv, options).wait();
}

} // namespace keyshim::test
