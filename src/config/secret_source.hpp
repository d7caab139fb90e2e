#pragma once
// Key material that is not written in the pool file: an environment variable
// (key_env) or the output of a command (key_cmd). Errors name the variable or
// the command, never a value or an output.
#include "config/config.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace keyshim::config {

struct SecretOutcome {
  std::optional<util::Secret> secret;
  std::string error; // when !secret: the rest of `"key_env" ...`, e.g. "names X, which is not set"
  std::optional<util::TimePoint> expires; // a key_cmd's token: the expiry its output reported
  std::string error_line; // a key_cmd with collect_stderr: its first stderr line (first_error_line)
};

// The value of environment variable `name`.
SecretOutcome secret_from_env(const std::string& name);

struct CommandLimits {
  milliseconds timeout{10'000};       // the command is killed after this
  std::size_t max_output = 64 * 1024; // more stdout than this is an error
  bool collect_stderr = false;        // stderr into error_line instead of keyshim's stderr
};

// Run `argv` without a shell (stdin /dev/null, stderr inherited unless
// collected) and take the key from its stdout as read_token_output reads it:
// the first line, trailing whitespace trimmed, or a JSON token and its
// expiry. Blocks up to `limits.timeout`.
SecretOutcome secret_from_command(const std::vector<std::string>& argv, const CommandLimits& limits = {});

} // namespace keyshim::config
