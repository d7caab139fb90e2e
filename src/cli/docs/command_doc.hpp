#pragma once
// The command line as plain data, read from the CLI11 application itself, so
// the man page and the shell completions are written from what keyshim
// actually accepts.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace keyshim::cli::docs {

struct OptionDoc {
  std::vector<std::string> names;   // as typed: short names first ("-c", "--config")
  std::string value_name;           // "FILE", "TEXT"; "" for a flag
  std::vector<std::string> choices; // the values an IsMember check allows; empty when any
  std::string description;
  bool is_help = false; // -h/--help or --version: every command's, not its own

  bool takes_value() const { return !value_name.empty(); }
  bool takes_file() const { return value_name == "FILE"; }
};

struct PositionalDoc {
  std::string name; // "command"
  std::string description;
  bool required = false;
  bool repeats = false; // takes every remaining argument
};

struct CommandDoc {
  std::vector<std::string> path; // {} for keyshim itself, {"service", "install"}
  std::string description;
  std::vector<OptionDoc> options;
  std::vector<PositionalDoc> positionals;
  std::vector<CommandDoc> subcommands;

  // "keyshim service install"
  std::string full_name() const;
  // "service install"; "" for keyshim itself
  std::string path_text() const;
};

// `app` and its subcommands, in the order --help lists them.
CommandDoc describe(const CLI::App& app);

// `root` and every command under it, depth first, root first.
std::vector<const CommandDoc*> all_commands(const CommandDoc& root);

} // namespace keyshim::cli::docs
