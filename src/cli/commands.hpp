#pragma once
// Each subcommand lives in its own file and registers itself here: it adds a
// CLI11 subcommand with its options and returns how to run it once parsed.
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace keyshim::cli {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run; // called after a successful parse when `app` was chosen
};

// keyshim's whole command line: its options, help text and every subcommand.
// run() parses with it; keyshim_docgen walks it for the man page and the
// shell completions, so they cannot drift from what keyshim accepts.
struct Cli {
  std::unique_ptr<CLI::App> app;
  std::vector<Subcommand> commands;
};
Cli make_cli();

Subcommand add_check(CLI::App& parent);
Subcommand add_init(CLI::App& parent);
Subcommand add_serve(CLI::App& parent);
Subcommand add_service(CLI::App& parent);
Subcommand add_env(CLI::App& parent);
Subcommand add_run(CLI::App& parent);
Subcommand add_status(CLI::App& parent);
Subcommand add_top(CLI::App& parent);
Subcommand add_replay(CLI::App& parent);
Subcommand add_reload(CLI::App& parent);
Subcommand add_demo(CLI::App& parent);
Subcommand add_log(CLI::App& parent);
Subcommand add_show(CLI::App& parent);
Subcommand add_capture(CLI::App& parent);

// Shared option helpers.
// `-c,--config FILE`, documented with the default-location rules.
CLI::Option* add_config_option(CLI::App& app, std::string& path);
// The file to use: the flag's value, else $KEYSHIM_CONFIG, else the XDG default.
std::string resolve_config_path(const std::string& flag_value);

} // namespace keyshim::cli
