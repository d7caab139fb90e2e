#include "service/command_runner.hpp"

#include "util/subprocess.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace keyshim::service {
namespace {

// Captured output is what a person may read; more than this is a broken tool.
constexpr std::size_t k_max_output = 16 * 1024 * 1024;

// In keyshim's process group, not its own: the command belongs to the
// terminal's foreground job like keyshim itself, so Ctrl-C stops both and a
// prompt can read the terminal. No deadline: systemctl may wait for a unit.
CommandResult run(const std::vector<std::string>& argv, bool capture) {
  CommandResult result;
  if (argv.empty()) {
    result.error = "empty command";
    return result;
  }
  util::SubprocessOptions options;
  options.capture = capture;
  options.capture_stderr = true;
  options.max_output = k_max_output;
  util::SubprocessResult run = util::run_subprocess(argv, options);
  if (!run.started()) {
    result.error =
        run.start_error == ENOENT ? std::string("not found") : std::string(std::strerror(run.start_error));
    return result;
  }
  result.started = true;
  result.exit_code = run.exit_code.value_or(-1);
  result.signal = run.signal;
  if (run.over_cap) {
    result.error = fmt::format("printed more than {} bytes", options.max_output);
  }
  result.output = std::move(run.output);
  return result;
}

bool needs_shell_quotes(const std::string& arg) {
  if (arg.empty()) {
    return true;
  }
  for (char c : arg) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                 c == '.' || c == '_' || c == '-' || c == '+' || c == ',' || c == ':' || c == '=' ||
                 c == '@' || c == '%';
    if (!plain) {
      return true;
    }
  }
  return false;
}

} // namespace

std::string CommandResult::describe() const {
  if (!started) {
    return error.empty() ? std::string("did not start") : error;
  }
  if (!error.empty()) {
    return error; // stopped by keyshim
  }
  if (signal != 0) {
    return fmt::format("killed by signal {}", signal);
  }
  return fmt::format("exit {}", exit_code);
}

CommandResult run_command(const std::vector<std::string>& argv) {
  return run(argv, false);
}

CommandResult run_command_captured(const std::vector<std::string>& argv) {
  return run(argv, true);
}

std::string shell_command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) {
      text += ' ';
    }
    if (!needs_shell_quotes(arg)) {
      text += arg;
      continue;
    }
    text += '\'';
    for (char c : arg) {
      if (c == '\'') {
        text += "'\\''";
      } else {
        text += c;
      }
    }
    text += '\'';
  }
  return text;
}

} // namespace keyshim::service
