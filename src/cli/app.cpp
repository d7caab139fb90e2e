#include "cli/app.hpp"

#include "cli/commands.hpp"
#include "config/paths.hpp"
#include "keyshim/version.hpp"

#include <fmt/format.h>

#include <exception>
#include <string>
#include <vector>

namespace keyshim::cli {
namespace {

constexpr const char* k_footer = R"(Exit codes: 0 ok, 1 bad configuration or runtime failure, 2 usage error.
Pool file: -c FILE, else $KEYSHIM_CONFIG, else $XDG_CONFIG_HOME/keyshim/keys.toml,
else ~/.config/keyshim/keys.toml.)";

std::string version_text() {
  std::string text = fmt::format("keyshim {}", k_version);
  if (*k_git_revision != '\0') {
    text += fmt::format(" ({})", k_git_revision);
  }
  return text;
}

} // namespace

CLI::Option* add_config_option(CLI::App& app, std::string& path) {
  return app.add_option("-c,--config", path,
                        "pool file (default: $KEYSHIM_CONFIG, else "
                        "$XDG_CONFIG_HOME/keyshim/keys.toml, else ~/.config/keyshim/keys.toml)");
}

std::string resolve_config_path(const std::string& flag_value) {
  return flag_value.empty() ? config::default_config_path() : flag_value;
}

int run(int argc, char** argv) {
  CLI::App app{"keyshim: one local base URL for a pool of LLM API keys, with failover", "keyshim"};
  app.footer(k_footer);
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);

  std::vector<Subcommand> commands = {
      add_serve(app), add_check(app),  add_init(app),   add_service(app), add_env(app),
      add_run(app),   add_status(app), add_reload(app), add_demo(app),
  };

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
