#include "cli/commands.hpp"

namespace keyshim::cli {

Subcommand add_check(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("check", "not yet implemented");
  return {app, [] { return 1; }};
}

} // namespace keyshim::cli
