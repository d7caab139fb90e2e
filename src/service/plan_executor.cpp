#include "service/plan_executor.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace keyshim::service {
namespace {

StepResult failure(std::string error) {
  StepResult result;
  result.ok = false;
  result.error = std::move(error);
  return result;
}

std::string errno_text(const char* what, const std::string& path) {
  return fmt::format("cannot {} {}: {}", what, path, std::strerror(errno));
}

// mkdir -p, giving each directory it creates `mode` exactly (mkdir applies
// the umask; a chmod afterwards does not).
StepResult make_directories(const std::string& path, unsigned mode) {
  std::string prefix;
  std::size_t at = 0;
  while (at != std::string::npos) {
    std::size_t next = path.find('/', at + 1);
    prefix = path.substr(0, next);
    at = next;
    if (prefix.empty() || prefix == "/") {
      continue;
    }
    if (::mkdir(prefix.c_str(), 0700) == 0) {
      if (::chmod(prefix.c_str(), static_cast<mode_t>(mode)) != 0) {
        return failure(errno_text("set the mode of", prefix));
      }
      continue;
    }
    struct stat info {};
    if (errno != EEXIST || ::stat(prefix.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      return failure(errno_text("create the directory", prefix));
    }
  }
  return {};
}

bool write_all(int fd, const std::string& content) {
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Write beside the target and rename over it, so the service manager never
// reads a half-written unit and a failed write leaves the old one intact.
StepResult write_file_atomically(const std::string& path, const std::string& content, unsigned mode) {
  std::string temporary = path + ".keyshim-XXXXXX";
  std::vector<char> name(temporary.begin(), temporary.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) {
    return failure(errno_text("create a file next to", path));
  }
  bool written = ::fchmod(fd, static_cast<mode_t>(mode)) == 0 && write_all(fd, content) && ::fsync(fd) == 0;
  int saved_errno = errno;
  if (::close(fd) != 0 && written) {
    written = false;
    saved_errno = errno;
  }
  if (!written || ::rename(name.data(), path.c_str()) != 0) {
    if (written) {
      saved_errno = errno;
    }
    ::unlink(name.data());
    errno = saved_errno;
    return failure(errno_text("write", path));
  }
  return {};
}

StepResult remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return failure(errno_text("remove", path));
  }
  return {};
}

StepResult run_step(const Action& action, const CommandRunner& runner) {
  StepResult result;
  result.command = runner(action.argv);
  if (!result.command->ok()) {
    result.ok = false;
    result.error = fmt::format("{}: {}", action.text(), result.command->describe());
  }
  return result;
}

} // namespace

StepResult perform_file_action(const Action& action) {
  switch (action.kind) {
  case Action::Kind::make_directory:
    return make_directories(action.path, action.mode);
  case Action::Kind::write_file:
    return write_file_atomically(action.path, action.content, action.mode);
  case Action::Kind::remove_file:
    return remove_file(action.path);
  case Action::Kind::run:
    break;
  }
  return failure("not a file step: " + action.text());
}

ExecutionResult execute_plan(const Plan& plan, const CommandRunner& runner, const StepObserver& observer) {
  ExecutionResult execution;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    const Action& action = plan.actions[i];
    if (observer.before) {
      observer.before(action);
    }
    StepResult result =
        action.kind == Action::Kind::run ? run_step(action, runner) : perform_file_action(action);
    if (observer.after) {
      observer.after(action, result);
    }
    if (!result.ok && action.required) {
      execution.ok = false;
      execution.failed_step = i;
      execution.failure = std::move(result);
      return execution;
    }
  }
  return execution;
}

} // namespace keyshim::service
