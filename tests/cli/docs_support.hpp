#pragma once
// The command line as the docs tests see it: walked from the CLI11 app
// itself (not through cli::docs, which they check), and the built files.
#include <string>
#include <vector>

namespace keyshim::test {

struct CliCommand {
  std::vector<std::string> path;         // {} for keyshim, {"service", "install"}
  std::vector<std::string> option_names; // "-c", "--config", "-h", "--help", ...
  std::vector<std::string> help_names;   // the subset that is --help / --version
  std::vector<std::string> subcommands;  // names of its direct subcommands
};

// keyshim and every subcommand, depth first.
std::vector<CliCommand> cli_commands();

// "serve", "service install"; "" for keyshim.
std::string path_text(const CliCommand& command, const char* separator = " ");

// A file keyshim_docgen wrote into the build's docs directory.
std::string built_doc(const std::string& name);
std::string built_doc_path(const std::string& name);

// Whether `program` is on PATH.
bool have_program(const std::string& program);

} // namespace keyshim::test
