#include "cli/child_command.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace keyshim::cli {
namespace {

sigset_t waited_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : forwarded_signals()) {
    sigaddset(&set, sig);
  }
  sigaddset(&set, SIGCHLD);
  return set;
}

// Sent with kill(), tgkill() or sigqueue() by some process, rather than by
// the kernel for the terminal (Ctrl-C, Ctrl-\, Ctrl-Z, hang-up, resize).
bool sent_by_a_process(const siginfo_t& info) {
  return info.si_code == SI_USER || info.si_code == SI_QUEUE || info.si_code == SI_TKILL;
}

// The job-control stops: the shell waits for keyshim, its job, to stop.
bool stops_the_job(int sig) {
  return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
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

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& text : strings) {
    out.push_back(const_cast<char*>(text.c_str()));
  }
  out.push_back(nullptr);
  return out;
}

// In the forked child, before exec: only async-signal-safe calls (keyshim
// has threads, one of which may hold the allocator's lock). Dies with
// keyshim (Linux), gets the dispositions and mask keyshim was started with,
// and reports a failed exec's errno through `report`.
[[noreturn]] void become_command(const char* name, char* const* args, char** env, const ChildSignals& signals,
                                 pid_t parent, int report) {
#ifdef __linux__
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(127); // keyshim is already gone
  }
#else
  (void)parent;
#endif
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig : forwarded_signals()) {
    if (sigismember(&signals.ignored, sig) == 0) {
      ::sigaction(sig, &default_action, nullptr);
    }
  }
  ::sigaction(SIGPIPE, &default_action, nullptr);
  ::sigprocmask(SIG_SETMASK, &signals.mask, nullptr);
  // execvp searches the PATH of the environment it is given, which is
  // keyshim's own: the child keeps it.
  environ = env;
  ::execvp(name, args);
  int error = errno;
  ssize_t ignored = ::write(report, &error, sizeof error);
  (void)ignored;
  ::_exit(127);
}

// Fork and exec `argv`; the child's pid, or -errno when it could not run.
pid_t start_command(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                    const ChildSignals& signals) {
  std::vector<char*> args = c_strings(argv);
  std::vector<char*> env = c_strings(environment);
  int report[2];
  if (::pipe(report) != 0) {
    return -errno;
  }
  ::fcntl(report[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(report[1], F_SETFD, FD_CLOEXEC);
  pid_t parent = ::getpid();
  pid_t child = ::fork();
  if (child == 0) {
    ::close(report[0]);
    become_command(args[0], args.data(), env.data(), signals, parent, report[1]);
  }
  int fork_error = errno;
  ::close(report[1]);
  int exec_error = 0;
  ssize_t got = -1;
  do {
    got = child > 0 ? ::read(report[0], &exec_error, sizeof exec_error) : 0;
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  if (child < 0) {
    return -fork_error;
  }
  if (got == static_cast<ssize_t>(sizeof exec_error)) {
    ::waitpid(child, nullptr, 0);
    return -exec_error;
  }
  return child;
}

// Pass one signal on, as the shell would have delivered it to the job.
void forward(int sig, const siginfo_t& info, pid_t child) {
  if (sent_by_a_process(info)) {
    ::kill(child, sig);
  }
  if (stops_the_job(sig)) {
    ::kill(::getpid(), SIGSTOP);
  }
}

} // namespace

const std::vector<int>& forwarded_signals() {
  static const std::vector<int> signals = [] {
    std::vector<int> out = {SIGHUP,  SIGINT,  SIGQUIT,  SIGTERM, SIGUSR1, SIGUSR2,   SIGALRM,
                            SIGPIPE, SIGCONT, SIGWINCH, SIGURG,  SIGIO,   SIGVTALRM, SIGPROF,
                            SIGXCPU, SIGXFSZ, SIGTSTP,  SIGTTIN, SIGTTOU};
#ifdef SIGPWR
    out.push_back(SIGPWR);
#endif
#ifdef SIGINFO
    out.push_back(SIGINFO);
#endif
#ifdef SIGRTMIN
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) {
      out.push_back(sig);
    }
#endif
    return out;
  }();
  return signals;
}

ChildSignals block_child_signals() {
  // An inherited SIG_IGN for SIGCHLD would reap the child before we could
  // read its status.
  signal(SIGCHLD, SIG_DFL);
  ChildSignals out;
  sigemptyset(&out.ignored);
  for (int sig : forwarded_signals()) {
    struct sigaction current {};
    if (sig != SIGPIPE && ::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) {
      sigaddset(&out.ignored, sig);
    }
  }
  sigset_t set = waited_signals();
  pthread_sigmask(SIG_BLOCK, &set, &out.mask);
  return out;
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
                      const ChildSignals& signals, const std::function<void()>& every_second) {
  const std::string& name = argv.front();
  pid_t child = start_command(argv, environment, signals);
  if (child == -ENOENT || child == -ENOTDIR) {
    fmt::print(stderr, "keyshim: {}: not found\n", name);
    return 127;
  }
  if (child < 0) {
    fmt::print(stderr, "keyshim: {}: {}\n", name,
               child == -EACCES ? std::string("permission denied") : std::string(std::strerror(-child)));
    return 126;
  }

  // keyshim outlives its child: every signal it forwards is blocked, and
  // taken here one at a time until the child has exited.
  sigset_t set = waited_signals();
  const timespec second{1, 0};
  while (true) {
    siginfo_t info{};
    int sig = every_second ? sigtimedwait(&set, &info, &second) : sigwaitinfo(&set, &info);
    if (sig < 0 && errno == EAGAIN) {
      every_second();
      continue;
    }
    if (sig < 0) {
      continue; // EINTR
    }
    if (sig != SIGCHLD) {
      forward(sig, info, child);
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
