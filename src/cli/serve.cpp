#include "cli/commands.hpp"

namespace keyshim::cli {

Subcommand add_serve(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("serve", "not yet implemented");
  return {app, [] { return 1; }};
}

} // namespace keyshim::cli
