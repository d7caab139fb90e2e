// keyshim status: ask a running instance for its key table with health, and
// print it for a person (or, with --json, exactly as /status answered).
#include "cli/commands.hpp"
#include "cli/status_table.hpp"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace keyshim::cli {
namespace {

struct StatusFlags {
  std::string config;
  std::string listen;
  bool json = false;
};

int run_status(const StatusFlags& flags) {
  StatusAnswer answer = fetch_status(locate_instance(flags.config, flags.listen));
  if (!answer.ok()) {
    throw std::runtime_error(answer.error);
  }
  if (flags.json) {
    fmt::print("{}\n", answer.body);
    return 0;
  }
  fmt::print("{}\n{}", render_status_heading(*answer.json),
             render_status_table(*answer.json, stdout_wants_colour()));
  return 0;
}

} // namespace

Subcommand add_status(CLI::App& parent) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* app = parent.add_subcommand(
      "status", "ask the running keyshim for its keys and their health; exit 0 when it answered "
                "(whatever the keys' state), 1 when no keyshim answered or it refused");
  add_config_option(*app, flags->config);
  app->add_option("--listen", flags->listen,
                  "ADDR:PORT of the instance to ask (default: the pool file's [server] listen, else " +
                      std::string(k_default_listen) + ")")
      ->type_name("ADDR:PORT");
  app->add_flag("--json", flags->json, "print the /status answer as received, for scripts");
  return {app, [flags] { return run_status(*flags); }};
}

} // namespace keyshim::cli
