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
};

// The value of environment variable `name`.
SecretOutcome secret_from_env(const std::string& name);

struct CommandLimits {
  milliseconds timeout{10'000};       // the command is killed after this
  std::size_t max_output = 64 * 1024; // more stdout than this is an error
};

// Run `argv` without a shell (stdin /dev/null, stderr inherited) and take the
// first line of its stdout, trailing whitespace trimmed. Blocks up to `limits.timeout`.
SecretOutcome secret_from_command(const std::vector<std::string>& argv, const CommandLimits& limits = {});

} // namespace keyshim::config
