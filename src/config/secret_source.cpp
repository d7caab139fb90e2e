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

int remaining_ms(steady::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - steady::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

// Wait for `pid` until `deadline`; true with `status` set when it ended.
bool wait_until(pid_t pid, steady::time_point deadline, int& status) {
  for (;;) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) {
      return true;
    }
    if (steady::now() >= deadline) {
      return false;
    }
    // The child closed its stdout but has not exited yet; check again shortly.
    ::poll(nullptr, 0, 5);
  }
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
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
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

  auto deadline = steady::now() + limits.timeout;
  std::string output;
  std::string problem;
  for (;;) {
    pollfd readable{pipe_fds[0], POLLIN, 0};
    int ready = ::poll(&readable, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready == 0 && steady::now() >= deadline) {
      problem = fmt::format("did not finish within {} and was killed", util::format_duration(limits.timeout));
      break;
    }
    if (ready <= 0) {
      continue;
    }
    char buffer[4096];
    ssize_t got = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    output.append(buffer, static_cast<std::size_t>(got));
    if (output.size() > limits.max_output) {
      problem = fmt::format("printed more than {} bytes", limits.max_output);
      break;
    }
  }
  ::close(pipe_fds[0]);

  int status = 0;
  if (!problem.empty() || !wait_until(pid, deadline, status)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    if (problem.empty()) {
      problem = fmt::format("did not finish within {} and was killed", util::format_duration(limits.timeout));
    }
    return failed(problem);
  }
  if (WIFSIGNALED(status)) {
    return failed(fmt::format("was killed by signal {}", WTERMSIG(status)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return failed(fmt::format("exited with status {}", WEXITSTATUS(status)));
  }
  std::string key = first_line_trimmed(output);
  if (key.empty()) {
    return failed("printed nothing");
  }
  if (std::string bad = key_material_problem(key); !bad.empty()) {
    return failed(fmt::format("printed a first line that {}", bad));
  }
  return {util::Secret(std::move(key)), ""};
}

} // namespace keyshim::config
