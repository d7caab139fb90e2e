#include "cli/app.hpp"

#include "cli/commands.hpp"
#include "cli/help_facts.hpp"
#include "config/paths.hpp"
#include "keyshim/version.hpp"

#include <fmt/format.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace keyshim::cli {
namespace {

std::string version_text() {
  std::string text = fmt::format("keyshim {}", k_version);
  if (*k_git_revision != '\0') {
    text += fmt::format(" ({})", k_git_revision);
  }
  return text;
}

} // namespace

CLI::Option* add_config_option(CLI::App& app, std::string& path) {
  return app
      .add_option("-c,--config", path, fmt::format("pool file (default: {})", config::k_default_config_rule))
      ->type_name("FILE");
}

std::string resolve_config_path(const std::string& flag_value) {
  return flag_value.empty() ? config::default_config_path() : flag_value;
}

Cli make_cli() {
  Cli cli;
  cli.app = std::make_unique<CLI::App>(
      "keyshim: one local base URL for a pool of LLM API keys, with failover", "keyshim");
  CLI::App& app = *cli.app;
  app.footer(help_footer());
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  cli.commands = {
      add_serve(app),   add_check(app),  add_init(app),   add_service(app), add_env(app),
      add_run(app),     add_status(app), add_top(app),    add_log(app),     add_show(app),
      add_capture(app), add_replay(app), add_reload(app), add_demo(app),
  };
  return cli;
}

int run(int argc, char** argv) {
  Cli cli = make_cli();
  CLI::App& app = *cli.app;
  std::vector<Subcommand>& commands = cli.commands;

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    // CLI11 uses its own codes for usage errors; keyshim promises 2.
    return code == 0 ? 0 : 2;
  }

  try {
    for (Subcommand& command : commands) {
      if (command.app->parsed()) {
        return command.run();
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "keyshim: error: {}\n", e.what());
    return 1;
  }
  return 2;
}

} // namespace keyshim::cli
