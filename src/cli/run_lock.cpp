#include "cli/run_lock.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace keyshim::cli {
namespace {

// How often a waiting run looks at the lock again, and for a stopping signal.
constexpr long k_poll_nanoseconds = 100'000'000;

// The user's own private directory for the lock files, or "" with `problem`.
std::string lock_directory(std::string& problem) {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  std::string dir = runtime != nullptr && runtime[0] == '/' ? std::string(runtime) + "/keyshim"
                                                            : fmt::format("/tmp/keyshim-{}", ::getuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    problem = fmt::format("cannot create {}: {}", dir, std::strerror(errno));
    return "";
  }
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid() ||
      (info.st_mode & 077) != 0) {
    problem = fmt::format("{} is not a directory of yours that only you can use", dir);
    return "";
  }
  return dir;
}

// "127.0.0.1:8787" -> "run-127.0.0.1-8787.lock", "[::1]:8787" -> "run-::1-8787.lock".
std::string lock_name(const config::ListenAddress& listen, const char* suffix) {
  return fmt::format("run-{}-{}.{}", listen.host, listen.port, suffix);
}

int open_lock(const std::string& path, std::string& problem) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    problem = fmt::format("cannot open {}: {}", path, std::strerror(errno));
  }
  return fd;
}

// Takes the pending stopping signal, if there is one.
bool stopping_signal_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    if (sigismember(&pending, sig) == 1) {
      sigset_t one;
      sigemptyset(&one);
      sigaddset(&one, sig);
      int taken = 0;
      ::sigwait(&one, &taken);
      return true;
    }
  }
  return false;
}

} // namespace

std::optional<RunLock> RunLock::attach(const config::ListenAddress& listen, std::string& problem) {
  std::string dir = lock_directory(problem);
  if (dir.empty()) {
    return std::nullopt;
  }
  int fd = open_lock(dir + "/" + lock_name(listen, "lock"), problem);
  int owner_fd = fd < 0 ? -1 : open_lock(dir + "/" + lock_name(listen, "owner"), problem);
  if (owner_fd < 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    return std::nullopt;
  }
  RunLock lock(fd, owner_fd);
  if (!lock.take(LOCK_SH, [] {})) {
    return std::nullopt;
  }
  return lock;
}

bool RunLock::run_serves(const config::ListenAddress& listen) {
  std::string problem;
  std::string dir = lock_directory(problem);
  int fd = dir.empty() ? -1 : ::open((dir + "/" + lock_name(listen, "owner")).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

RunLock::RunLock(RunLock&& other) noexcept : m_fd(other.m_fd), m_owner_fd(other.m_owner_fd) {
  other.m_fd = -1;
  other.m_owner_fd = -1;
}

RunLock::~RunLock() {
  // Closing releases the locks.
  if (m_fd >= 0) {
    ::close(m_fd);
  }
  if (m_owner_fd >= 0) {
    ::close(m_owner_fd);
  }
}

bool RunLock::take_ownership() {
  return ::flock(m_owner_fd, LOCK_EX | LOCK_NB) == 0;
}

void RunLock::give_up_ownership() {
  ::flock(m_owner_fd, LOCK_UN);
}

bool RunLock::owned_by_another_run() {
  if (!take_ownership()) {
    return true;
  }
  give_up_ownership();
  return false;
}

bool RunLock::wait_until_alone(const std::function<void()>& on_wait) {
  // Converting a shared flock to an exclusive one is not atomic anyway:
  // let go first, then wait for the others to go.
  ::flock(m_fd, LOCK_UN);
  return take(LOCK_EX, on_wait);
}

bool RunLock::take(int operation, const std::function<void()>& on_wait) {
  bool waited = false;
  while (::flock(m_fd, operation | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return true; // a lock that cannot work (NFS): go on without it
    }
    if (!waited) {
      on_wait();
      waited = true;
    }
    // The stopping signals are blocked in this thread: one that came is
    // pending (sigtimedwait would say so sooner, but macOS lacks it).
    if (stopping_signal_pending()) {
      return false;
    }
    timespec poll{0, k_poll_nanoseconds};
    ::nanosleep(&poll, nullptr);
  }
  return true;
}

} // namespace keyshim::cli
