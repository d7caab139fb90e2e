#include "cli/commands.hpp"

namespace keyshim::cli {

Subcommand add_init(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("init", "not yet implemented");
  return {app, [] { return 1; }};
}

} // namespace keyshim::cli
