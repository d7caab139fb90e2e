#pragma once
// Watching processes a test started through a command (a background job's
// pid written to a file), to check that they were killed.
#include <sys/types.h>

#include <string>

namespace keyshim::test {

// Alive and not a zombie: a killed orphan stays a zombie until its new
// parent reaps it, and a container's init may never do that.
bool is_running(pid_t pid);

// Whether `pid` stops running within about 5 s. SIGKILL is delivered
// asynchronously, so this looks a bounded number of times.
bool ends_soon(pid_t pid);

// The pid a command wrote to `path` ("echo $! > path"), or 0.
pid_t pid_in(const std::string& path);

} // namespace keyshim::test
