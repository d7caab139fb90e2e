#pragma once
// Running one command the way a shell runs a foreground job, for `keyshim
// run`: same process group and terminal, signals sent to keyshim passed on,
// and the shell's exit codes (127 not found, 126 not executable, 128+N when
// killed by signal N).
#include <signal.h>

#include <string>
#include <vector>

namespace keyshim::cli {

// Block, in the calling thread, the signals run_child_command waits for
// (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD); threads started afterwards
// inherit the mask. Call before any thread exists. Returns the mask before,
// which the child gets back.
sigset_t block_child_signals();

// Close-on-exec for every descriptor open now that is not in `inherited`
// (from open_descriptors()): what keyshim opened itself, such as its
// listening socket, must not outlive it in the command or its children.
std::vector<int> open_descriptors();
void keep_descriptors_from_child(const std::vector<int>& inherited);

// Run `argv` (argv[0] looked up in PATH) with exactly `environment`
// ("NAME=value" entries) and `child_mask`, wait for it, and return its exit
// code. A signal sent to keyshim by another process is passed on to the
// child; one from the terminal is not, since the child, in the same
// foreground process group, got it too. Prints "keyshim: NAME: not found"
// and the like when it cannot be started. Needs block_child_signals() first.
int run_child_command(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                      const sigset_t& child_mask);

} // namespace keyshim::cli
