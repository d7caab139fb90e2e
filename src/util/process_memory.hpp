#pragma once
// Keys live in serve's memory. These keep that memory out of core dumps and
// away from other processes of the same user: neither a crash nor `gdb -p`
// may hand out the pool.
#include <string>

namespace keyshim::util {

// No core dumps (RLIMIT_CORE 0) and, on Linux, not dumpable (PR_SET_DUMPABLE
// 0), which also refuses ptrace and /proc/PID/mem to same-user processes.
// Returns what could not be done ("" when everything was), for a warning.
std::string protect_process_memory();

// Whether this process may be core dumped or attached to: dumpable, or a
// non-zero core size limit.
bool process_memory_is_exposed();

} // namespace keyshim::util
