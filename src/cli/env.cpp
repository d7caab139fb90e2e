// keyshim env: the variables that point common tools at keyshim, printed as
// shell assignments for `eval "$(keyshim env)"` (or `keyshim env --shell fish
// | source`).
#include "cli/commands.hpp"
#include "cli/tool_arguments.hpp"
#include "cli/tool_variables.hpp"
#include "config/loader.hpp"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace keyshim::cli {
namespace {

struct EnvOptions {
  std::string config;
  std::string shell = "sh";
};

// What keyshim serves when the pool file is unusable (serve does the same).
constexpr const char* k_default_listen = "127.0.0.1:8787";

// POSIX sh: inside single quotes nothing is special; a quote is closed,
// escaped and reopened.
std::string sh_quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// fish: inside single quotes only \' and \\ are escapes.
std::string fish_quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "'";
}

// Whether a shell would read `text` as something else unquoted; a URL and
// an option name read as themselves.
bool needs_quotes(const std::string& text) {
  return text.empty() ||
         text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "_-./:=@,+%") != std::string::npos;
}

// The comment line is evaluated too: a newline in the path would end it and
// run the rest as a command.
std::string comment_safe(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  return text;
}

int run_env(const EnvOptions& options) {
  std::string path = resolve_config_path(options.config);
  std::string listen = k_default_listen;
  std::vector<ToolVariable> variables;

  // env runs from shell start-up files: a pool file that cannot be used must
  // not leave the shell without its variables, only warn.
  config::LoadResult loaded = config::load_pool_file(path, config::SecretResolution::skip);
  if (loaded.ok()) {
    listen = loaded.config->server.listen.text();
    // The client_token among them is printed on purpose: that is how
    // `eval "$(keyshim env)"` hands it to the tools.
    variables = tool_variables(&*loaded.config, listen);
  } else {
    const config::Problem& first = loaded.problems.front();
    std::size_t more = loaded.problems.size() - 1;
    fmt::print(stderr, "keyshim: warning: {}{}\n", first.text(),
               more == 0 ? std::string() : fmt::format(" (and {} more)", more));
    fmt::print(stderr, "keyshim: warning: using the default address {}; see `keyshim check -c {}`\n", listen,
               path);
    variables = tool_variables(nullptr, listen);
  }

  bool fish = options.shell == "fish";
  fmt::print("# keyshim at http://{} (pool file: {})\n", listen, comment_safe(path));
  for (const ToolVariable& variable : variables) {
    if (fish) {
      fmt::print("set -gx {} {}\n", variable.name, fish_quote(variable.value));
    } else {
      fmt::print("export {}={}\n", variable.name, sh_quote(variable.value));
    }
  }
  // Settings that are not variables: `keyshim run` adds them itself.
  for (const ToolArguments& tool : tool_arguments(variables)) {
    std::string arguments;
    for (const std::string& argument : tool.arguments) {
      arguments +=
          " " + (needs_quotes(argument) ? (fish ? fish_quote(argument) : sh_quote(argument)) : argument);
    }
    fmt::print("# {}: run `{}{}` ({}; keyshim run adds it)\n", tool.tool, tool.tool, comment_safe(arguments),
               tool.why);
  }
  return 0;
}

} // namespace

Subcommand add_env(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "env", "print the variables that point common tools at keyshim, for eval \"$(keyshim env)\"");
  auto options = std::make_shared<EnvOptions>();
  add_config_option(*app, options->config);
  app->add_option("--shell", options->shell, "syntax of the output (default: sh)")
      ->check(CLI::IsMember({"sh", "fish"}));
  return {app, [options] { return run_env(*options); }};
}

} // namespace keyshim::cli
