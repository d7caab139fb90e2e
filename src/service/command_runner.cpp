#include "service/command_runner.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace keyshim::service {
namespace {

std::string spawn_error_text(int error) {
  return error == ENOENT ? std::string("not found") : std::string(std::strerror(error));
}

// Spawn `argv` and wait for it. When `capture_fd` is not -1 it becomes the
// child's stdout and stderr (and /dev/null its stdin), and everything the
// child writes is read from `read_fd` into `output`. Both pipe ends are
// close-on-exec, so the child keeps only its dup2'ed copies.
CommandResult spawn_and_wait(const std::vector<std::string>& argv, int capture_fd, int read_fd,
                             std::string* output) {
  CommandResult result;
  if (argv.empty()) {
    result.error = "empty command";
    return result;
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (capture_fd != -1) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, capture_fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, capture_fd, STDERR_FILENO);
  }
  pid_t pid = 0;
  int error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (capture_fd != -1) {
    ::close(capture_fd);
  }
  if (error != 0) {
    result.error = spawn_error_text(error);
    return result;
  }
  result.started = true;

  if (output != nullptr) {
    char buffer[4096];
    for (;;) {
      ssize_t n = ::read(read_fd, buffer, sizeof buffer);
      if (n > 0) {
        output->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
  }

  int status = 0;
  while (::waitpid(pid, &status, 0) == -1) {
    if (errno != EINTR) {
      result.error = std::strerror(errno);
      return result;
    }
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

bool needs_shell_quotes(const std::string& arg) {
  if (arg.empty()) {
    return true;
  }
  for (char c : arg) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                 c == '.' || c == '_' || c == '-' || c == '+' || c == ',' || c == ':' || c == '=' ||
                 c == '@' || c == '%';
    if (!plain) {
      return true;
    }
  }
  return false;
}

} // namespace

std::string CommandResult::describe() const {
  if (!started) {
    return error.empty() ? std::string("did not start") : error;
  }
  if (signal != 0) {
    return fmt::format("killed by signal {}", signal);
  }
  return fmt::format("exit {}", exit_code);
}

CommandResult run_command(const std::vector<std::string>& argv) {
  return spawn_and_wait(argv, -1, -1, nullptr);
}

CommandResult run_command_captured(const std::vector<std::string>& argv) {
  int fds[2];
  // pipe() + FD_CLOEXEC rather than pipe2(): macOS has no pipe2. No other
  // thread spawns processes while a service command runs.
  if (::pipe(fds) != 0) {
    CommandResult result;
    result.error = std::strerror(errno);
    return result;
  }
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  std::string output;
  CommandResult result = spawn_and_wait(argv, fds[1], fds[0], &output);
  ::close(fds[0]);
  result.output = std::move(output);
  return result;
}

std::string shell_command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) {
      text += ' ';
    }
    if (!needs_shell_quotes(arg)) {
      text += arg;
      continue;
    }
    text += '\'';
    for (char c : arg) {
      if (c == '\'') {
        text += "'\\''";
      } else {
        text += c;
      }
    }
    text += '\'';
  }
  return text;
}

} // namespace keyshim::service
