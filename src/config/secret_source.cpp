#include "config/secret_source.hpp"

#include "config/text_helpers.hpp"
#include "config/value_parsers.hpp"
#include "util/duration.hpp"
#include "util/subprocess.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

namespace keyshim::config {
namespace {

// The key is the first line: `pass show` prints the password first and
// metadata after it.
std::string first_line_trimmed(const std::string& output) {
  std::string line = output.substr(0, output.find('\n'));
  while (!line.empty() && std::strchr(" \t\r\n\f\v", line.back()) != nullptr) {
    line.pop_back();
  }
  return line;
}

} // namespace

SecretOutcome secret_from_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) {
    return {std::nullopt, fmt::format("names {}, which is not set", name)};
  }
  std::string problem = key_material_problem(value);
  if (!problem.empty()) {
    return {std::nullopt, fmt::format("names {}, whose value {}", name, problem)};
  }
  return {util::Secret(value), ""};
}

SecretOutcome secret_from_command(const std::vector<std::string>& argv, const CommandLimits& limits) {
  const std::string& program = argv.at(0);
  auto failed = [&](const std::string& what) {
    return SecretOutcome{std::nullopt, fmt::format("runs \"{}\", which {}", program, what)};
  };
  // issue 9: in its own process group, so that a background job it leaves
  // holding stdout neither delays the key nor outlives it.
  util::SubprocessOptions options;
  options.max_output = limits.max_output;
  options.timeout = limits.timeout;
  options.own_process_group = true;
  util::SubprocessResult run = util::run_subprocess(argv, options);
  // A Secret at once, so the key's bytes are wiped on every path out of here.
  util::Secret key(first_line_trimmed(run.output));
  util::wipe(run.output);
  if (!run.started()) {
    return failed(fmt::format("could not be started: {}", errno_text(run.start_error)));
  }
  if (run.over_cap) {
    return failed(fmt::format("printed more than {} bytes", limits.max_output));
  }
  if (run.timed_out) {
    return failed(
        fmt::format("did not finish within {} and was killed", util::format_duration(limits.timeout)));
  }
  if (run.signal != 0) {
    return failed(fmt::format("was killed by signal {}", run.signal));
  }
  if (!run.exit_code) {
    return failed("ended with an unknown status");
  }
  if (*run.exit_code != 0) {
    return failed(fmt::format("exited with status {}", *run.exit_code));
  }
  if (key.empty()) {
    return failed("printed nothing");
  }
  if (std::string bad = key_material_problem(key.reveal()); !bad.empty()) {
    return failed(fmt::format("printed a first line that {}", bad));
  }
  return {std::move(key), ""};
}

} // namespace keyshim::config
