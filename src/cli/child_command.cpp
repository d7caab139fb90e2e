#include "cli/child_command.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace keyshim::cli {
namespace {

sigset_t waited_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) {
    sigaddset(&set, sig);
  }
  return set;
}

// Sent with kill(), tgkill() or sigqueue() by some process, rather than by
// the kernel for the terminal (Ctrl-C, Ctrl-\, hang-up).
bool sent_by_a_process(const siginfo_t& info) {
  return info.si_code == SI_USER || info.si_code == SI_QUEUE || info.si_code == SI_TKILL;
}

// What a shell reports for a finished job.
int shell_exit_code(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return 1;
}

// posix_spawn's attributes for the child: the caller's original signal mask
// and default dispositions, in keyshim's own process group so that an
// interactive tool keeps the terminal and gets the terminal's signals.
class SpawnAttributes {
public:
  explicit SpawnAttributes(const sigset_t& child_mask) {
    posix_spawnattr_init(&m_attributes);
    posix_spawnattr_setsigmask(&m_attributes, &child_mask);
    sigset_t defaults = waited_signals();
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&m_attributes, &defaults);
    posix_spawnattr_setflags(&m_attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&m_attributes); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;

  const posix_spawnattr_t* get() const { return &m_attributes; }

private:
  posix_spawnattr_t m_attributes{};
};

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& text : strings) {
    out.push_back(const_cast<char*>(text.c_str()));
  }
  out.push_back(nullptr);
  return out;
}

} // namespace

sigset_t block_child_signals() {
  // An inherited SIG_IGN for SIGCHLD would reap the child before we could
  // read its status.
  signal(SIGCHLD, SIG_DFL);
  sigset_t set = waited_signals();
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &set, &before);
  return before;
}

std::vector<int> open_descriptors() {
  std::vector<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) {
    return fds;
  }
  // Not the directory's own descriptor: its number is free again afterwards,
  // and the next socket may well get it.
  int own = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.' && std::atoi(entry->d_name) != own) {
      fds.push_back(std::atoi(entry->d_name));
    }
  }
  closedir(dir);
  return fds;
}

void keep_descriptors_from_child(const std::vector<int>& inherited) {
  for (int fd : open_descriptors()) {
    if (std::find(inherited.begin(), inherited.end(), fd) == inherited.end()) {
      int flags = fcntl(fd, F_GETFD);
      if (flags >= 0) {
        fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
      }
    }
  }
}

int run_child_command(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                      const sigset_t& child_mask) {
  const std::string& name = argv.front();
  SpawnAttributes attributes(child_mask);
  std::vector<char*> args = c_strings(argv);
  std::vector<char*> env = c_strings(environment);
  pid_t child = -1;
  // posix_spawnp searches keyshim's own PATH, which the child keeps, and
  // reports a failed exec as its return value.
  int error = posix_spawnp(&child, name.c_str(), nullptr, attributes.get(), args.data(), env.data());
  if (error == ENOENT || error == ENOTDIR) {
    fmt::print(stderr, "keyshim: {}: not found\n", name);
    return 127;
  }
  if (error != 0) {
    fmt::print(stderr, "keyshim: {}: {}\n", name,
               error == EACCES ? std::string("permission denied") : std::string(std::strerror(error)));
    return 126;
  }

  // keyshim outlives its child: every signal it waits for is blocked, and
  // taken here one at a time until the child has exited.
  sigset_t set = waited_signals();
  while (true) {
    siginfo_t info{};
    int sig = sigwaitinfo(&set, &info);
    if (sig < 0) {
      continue; // EINTR
    }
    if (sig != SIGCHLD) {
      if (sent_by_a_process(info)) {
        kill(child, sig);
      }
      continue;
    }
    // SIGCHLD also comes for a stopped child, and for a key_cmd that was
    // reaped long ago: only our child's exit ends the wait.
    int status = 0;
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      return shell_exit_code(status);
    }
    if (done < 0 && errno != EINTR) {
      fmt::print(stderr, "keyshim: waiting for {}: {}\n", name, std::strerror(errno));
      return 1;
    }
  }
}

} // namespace keyshim::cli
