#pragma once
// Running one command the way a shell runs a foreground job, for `keyshim
// run`: same process group and terminal, signals sent to keyshim passed on,
// and the shell's exit codes (127 not found, 126 not executable, 128+N when
// killed by signal N).
#include <signal.h>

#include <functional>
#include <string>
#include <vector>

namespace keyshim::cli {

// What the child gets back of keyshim's own signal state at start.
struct ChildSignals {
  sigset_t mask{};    // the signal mask before block_child_signals
  sigset_t ignored{}; // forwarded signals keyshim was started with ignored (nohup)
};

// Every signal a shell can send that can be caught and is not a fault of
// keyshim's own: HUP INT QUIT TERM USR1 USR2 ALRM PIPE CONT WINCH URG IO
// PWR VTALRM PROF XCPU XFSZ, TSTP TTIN TTOU, the real-time ones. Not KILL
// and STOP (they cannot be caught), CHLD (it is the child's own news), nor
// SEGV BUS FPE ILL TRAP SYS ABRT (faults and debugger traps of the process
// that gets them).
const std::vector<int>& forwarded_signals();

// Block, in the calling thread, the forwarded signals and SIGCHLD; threads
// started afterwards inherit the mask. Call before any thread exists.
ChildSignals block_child_signals();

// Close-on-exec for every descriptor open now that is not in `inherited`
// (from open_descriptors()): what keyshim opened itself, such as its
// listening socket, must not outlive it in the command or its children.
std::vector<int> open_descriptors();
void keep_descriptors_from_child(const std::vector<int>& inherited);

// Run `argv` (argv[0] looked up in PATH) with exactly `environment`
// ("NAME=value" entries) and `signals`, wait for it, and return its exit
// code. A forwarded signal sent to keyshim by another process is passed on
// to the child; one from the terminal is not, since the child, in the same
// foreground process group, got it too. TSTP, TTIN and TTOU also stop
// keyshim itself, so the shell sees its job stop. On Linux the child is
// killed if keyshim dies without forwarding (SIGKILL, a crash). Prints
// "keyshim: NAME: not found" and the like when it cannot be started. Needs
// block_child_signals() first. `every_second`, when set, is called about
// once a second while the command runs, on this thread.
int run_child_command(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                      const ChildSignals& signals, const std::function<void()>& every_second = {});

} // namespace keyshim::cli
