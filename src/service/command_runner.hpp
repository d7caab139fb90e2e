#pragma once
// Runs a program directly (posix_spawnp, no shell), so no argument is ever
// re-parsed: a config path with spaces or quotes reaches systemctl as is.
#include <functional>
#include <string>
#include <vector>

namespace keyshim::service {

struct CommandResult {
  bool started = false; // false: the program could not be run at all
  int exit_code = -1;   // valid when the program exited normally
  int signal = 0;       // non-zero when it was killed by a signal
  std::string error;    // why it did not start ("not found", ...) or was stopped
  std::string output;   // stdout and stderr, only when captured

  bool ok() const { return started && signal == 0 && exit_code == 0; }
  // "exit 3", "killed by signal 9", "not found".
  std::string describe() const;
};

// Runs `argv` (argv[0] looked up in $PATH) with this process's stdin, stdout
// and stderr, and waits for it.
CommandResult run_command(const std::vector<std::string>& argv);

// Same, with stdout and stderr captured together into `output`; stdin is
// /dev/null.
CommandResult run_command_captured(const std::vector<std::string>& argv);

// How the executor runs commands: run_command in real use, a recorder in tests.
using CommandRunner = std::function<CommandResult(const std::vector<std::string>& argv)>;

// "systemctl --user enable keyshim.service", each argument quoted for a POSIX
// shell only when it needs it, so a printed command can be pasted.
std::string shell_command_text(const std::vector<std::string>& argv);

} // namespace keyshim::service
