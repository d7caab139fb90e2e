#include "config/secret_source.hpp"

#include "config/text_helpers.hpp"
#include "config/value_parsers.hpp"
#include "util/duration.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace keyshim::config {
namespace {

using steady = std::chrono::steady_clock;

// How often a running command is checked for having exited. Its exit does
// not close the pipe when a grandchild (`sleep 30 &`) holds a copy.
constexpr int k_exit_check_ms = 10;

int remaining_ms(steady::time_point deadline) {
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
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      output.append(buffer, static_cast<std::size_t>(got));
      if (output.size() > max_output) {
        return PipeState::full;
      }
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return PipeState::open;
    } else {
      return PipeState::closed;
    }
  }
}

// Collect stdout until the child exits; "" then, or why it was stopped. The
// run ends with the child, not with the pipe: what the child wrote before
// exiting is already in the pipe, and a grandchild's later output is not
// the key.
std::string collect_output(pid_t pid, int fd, const CommandLimits& limits, std::string& output) {
  auto deadline = steady::now() + limits.timeout;
  bool pipe_open = true;
  for (;;) {
    bool exited = has_exited(pid);
    if (pipe_open) {
      PipeState state = read_available(fd, output, limits.max_output);
      if (state == PipeState::full) {
        return fmt::format("printed more than {} bytes", limits.max_output);
      }
      pipe_open = state == PipeState::open;
    }
    if (exited) {
      return "";
    }
    if (steady::now() >= deadline) {
      return fmt::format("did not finish within {} and was killed", util::format_duration(limits.timeout));
    }
    pollfd readable{fd, POLLIN, 0};
    ::poll(&readable, pipe_open ? 1 : 0, remaining_ms(deadline));
  }
}

// Kill what is left of the command's process group (everything after a
// timeout, leftover background jobs after an exit), then reap the child.
int end_process_group(pid_t pid) {
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// posix_spawn attributes that undo what a daemon may have set up for itself:
// the child gets an empty signal mask and default handlers.
struct SpawnSetup {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attributes{};

  SpawnSetup(int out_read, int out_write) {
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_write, STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out_read);
    posix_spawn_file_actions_addclose(&actions, out_write);
    posix_spawnattr_init(&attributes);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int sig : {SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGCHLD}) {
      sigaddset(&defaults, sig);
    }
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    // Its own process group, so its leftovers can be killed with it.
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// The key is the first line: `pass show` prints the password first and
// metadata after it.
std::string first_line_trimmed(const std::string& output) {
  std::string line = output.substr(0, output.find('\n'));
  while (!line.empty() && std::strchr(" \t\r\n\f\v", line.back()) != nullptr) {
    line.pop_back();
  }
  return line;
}

} // namespace

SecretOutcome secret_from_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) {
    return {std::nullopt, fmt::format("names {}, which is not set", name)};
  }
  std::string problem = key_material_problem(value);
  if (!problem.empty()) {
    return {std::nullopt, fmt::format("names {}, whose value {}", name, problem)};
  }
  return {util::Secret(value), ""};
}

SecretOutcome secret_from_command(const std::vector<std::string>& argv, const CommandLimits& limits) {
  const std::string& program = argv.at(0);
  auto failed = [&](const std::string& what) {
    return SecretOutcome{std::nullopt, fmt::format("runs \"{}\", which {}", program, what)};
  };
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    return failed(fmt::format("could not be started: {}", errno_text(errno)));
  }
  ::fcntl(pipe_fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(pipe_fds[1], F_SETFD, FD_CLOEXEC);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);

  pid_t pid = 0;
  int spawn_error = 0;
  {
    SpawnSetup setup(pipe_fds[0], pipe_fds[1]);
    spawn_error =
        ::posix_spawnp(&pid, program.c_str(), &setup.actions, &setup.attributes, args.data(), environ);
  }
  ::close(pipe_fds[1]);
  if (spawn_error != 0) {
    ::close(pipe_fds[0]);
    return failed(fmt::format("could not be started: {}", errno_text(spawn_error)));
  }

  ::fcntl(pipe_fds[0], F_SETFL, ::fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
  std::string output;
  std::string problem = collect_output(pid, pipe_fds[0], limits, output);
  ::close(pipe_fds[0]);
  int status = end_process_group(pid);
  // A Secret at once, so the key's bytes are wiped on every path out of here.
  util::Secret key(first_line_trimmed(output));
  util::wipe(output);
  if (!problem.empty()) {
    return failed(problem);
  }
  if (WIFSIGNALED(status)) {
    return failed(fmt::format("was killed by signal {}", WTERMSIG(status)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return failed(fmt::format("exited with status {}", WEXITSTATUS(status)));
  }
  if (key.empty()) {
    return failed("printed nothing");
  }
  if (std::string bad = key_material_problem(key.reveal()); !bad.empty()) {
    return failed(fmt::format("printed a first line that {}", bad));
  }
  return {std::move(key), ""};
}

} // namespace keyshim::config
