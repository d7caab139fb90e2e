#include "config/secret_source.hpp"

#include "config/text_helpers.hpp"
#include "config/token_output.hpp"
#include "config/value_parsers.hpp"
#include "util/duration.hpp"
#include "util/subprocess.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace keyshim::config {
namespace {

// The first line of stderr, with anything the command printed on stdout's
// first line (a key, on some failure paths) shown as its fingerprint.
std::string error_line_of(const util::SubprocessResult& run) {
  std::string line = first_error_line(run.errors);
  std::string printed = run.output.substr(0, run.output.find('\n'));
  constexpr std::size_t k_shortest_shown = 8; // shorter output is no key worth hiding in a line
  if (printed.size() >= k_shortest_shown) {
    for (std::size_t at = line.find(printed); at != std::string::npos; at = line.find(printed, at)) {
      line.replace(at, printed.size(), util::fingerprint_of(printed));
    }
  }
  util::wipe(printed);
  return line;
}

} // namespace

SecretOutcome secret_from_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) {
    return {std::nullopt, fmt::format("names {}, which is not set", name), std::nullopt, ""};
  }
  std::string problem = key_material_problem(value);
  if (!problem.empty()) {
    return {std::nullopt, fmt::format("names {}, whose value {}", name, problem), std::nullopt, ""};
  }
  return {util::Secret(value), "", std::nullopt, ""};
}

SecretOutcome secret_from_command(const std::vector<std::string>& argv, const CommandLimits& limits) {
  const std::string& program = argv.at(0);
  // issue 9: in its own process group, so that a background job it leaves
  // holding stdout neither delays the key nor outlives it.
  util::SubprocessOptions options;
  options.max_output = limits.max_output;
  options.timeout = limits.timeout;
  options.own_process_group = true;
  options.collect_stderr = limits.collect_stderr;
  util::SubprocessResult run = util::run_subprocess(argv, options);
  SecretOutcome outcome;
  outcome.error_line = error_line_of(run);
  // Read at once, so the key's bytes are wiped on every path out of here.
  std::string problem;
  std::optional<TokenOutput> token = read_token_output(run.output, util::system_clock().now(), problem);
  util::wipe(run.output);
  auto failed = [&](const std::string& what) {
    outcome.error = fmt::format("runs \"{}\", which {}", program, what);
    return outcome;
  };
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
  if (!token) {
    return failed("printed " + problem);
  }
  outcome.secret = std::move(token->token);
  outcome.expires = token->expires;
  return outcome;
}

} // namespace keyshim::config
