// serve's protection of the keys in its memory. Checked in a forked child:
// the test process itself stays debuggable.
#include "util/process_memory.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// Run `check` in a child process; its return value is the exit status.
int in_child(int (*check)()) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::_exit(check());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

// A core size limit above zero, as a developer's shell may have.
void allow_core_dumps() {
  rlimit limit{};
  ::getrlimit(RLIMIT_CORE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_CORE, &limit);
}

} // namespace

TEST(ProcessMemory, ProtectionTurnsOffCoreDumpsAndDebuggerAccess) {
  int result = in_child([] {
    allow_core_dumps();
    if (!keyshim::util::process_memory_is_exposed()) {
      return 2; // the check below could not fail
    }
    if (!keyshim::util::protect_process_memory().empty()) {
      return 3;
    }
    return keyshim::util::process_memory_is_exposed() ? 1 : 0;
  });
  EXPECT_EQ(result, 0)
      << "1: still exposed, 2: exposed check cannot fail here, 3: protection reported a problem";
}

TEST(ProcessMemory, ExposedMeansDumpableOrACoreLimit) {
  int result = in_child([] {
    rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
    // Still dumpable: exposed although no core can be written.
    return keyshim::util::process_memory_is_exposed() ? 0 : 1;
  });
  EXPECT_EQ(result, 0);
}
