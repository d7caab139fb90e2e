#include "cli/docs/man_page.hpp"

#include "cli/help_facts.hpp"
#include "config/paths.hpp"
#include "service/service_plan.hpp"
#include "util/roff.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace keyshim::cli::docs {
namespace {

using util::roff::bold;
using util::roff::italic;
using util::roff::Page;
using util::roff::sentence;

// "text|json" in bold, or the value's name in italics.
std::string value_roff(const OptionDoc& option) {
  if (option.choices.empty()) {
    return italic(option.value_name);
  }
  std::string out;
  for (const std::string& choice : option.choices) {
    out += (out.empty() ? "" : "|") + bold(choice);
  }
  return out;
}

// "-c, --config FILE": every name, then the value.
std::string option_tag(const OptionDoc& option) {
  std::string out;
  for (const std::string& name : option.names) {
    out += (out.empty() ? "" : ", ") + bold(name);
  }
  return option.takes_value() ? out + " " + value_roff(option) : out;
}

// "keyshim serve [-c FILE] [--listen TEXT] ...", on one line for groff to fill.
std::string synopsis(const CommandDoc& command) {
  std::string out = bold(command.full_name());
  for (const OptionDoc& option : command.options) {
    if (option.is_help) {
      continue;
    }
    std::string usage = bold(option.names.front());
    out += " [" + (option.takes_value() ? usage + " " + value_roff(option) : usage) + "]";
  }
  if (!command.subcommands.empty()) {
    std::string actions;
    for (const CommandDoc& sub : command.subcommands) {
      actions += (actions.empty() ? "" : "|") + bold(sub.path.back());
    }
    out += " " + actions + " " + "[" + italic("options") + "]";
  }
  for (const PositionalDoc& positional : command.positionals) {
    // A repeated positional is a command line of its own: "--" keeps its
    // options away from keyshim's.
    std::string usage = (positional.repeats ? bold("--") + " " : "") + italic(positional.name) +
                        (positional.repeats ? " " + util::roff::escape("...") : "");
    out += " " + (positional.required ? usage : "[" + usage + "]");
  }
  return out;
}

void describe_command(Page& page, const CommandDoc& command) {
  page.subsection(command.full_name());
  page.roff_line(synopsis(command));
  page.line_break();
  page.text(sentence(command.description));
  for (const PositionalDoc& positional : command.positionals) {
    page.tagged(italic(positional.name), sentence(positional.description));
  }
  for (const OptionDoc& option : command.options) {
    if (!option.is_help) {
      page.tagged(option_tag(option), sentence(option.description));
    }
  }
}

void describe_program(Page& page, const CommandDoc& root) {
  std::string summary = root.description.substr(root.description.find(": ") + 2);
  page.section("NAME");
  page.text("keyshim - " + summary);
  page.section("SYNOPSIS");
  page.roff_line(bold("keyshim") + " " + italic("command") + " [" + italic("options") + "]");
  page.line_break();
  page.roff_line(bold("keyshim") + " " + bold("--help") + "|" + bold("--version"));
  page.section("DESCRIPTION");
  page.paragraph("keyshim stands in for an LLM API's base URL on this machine. A tool that accepts one base "
                 "URL and one key is pointed at keyshim instead (http://127.0.0.1:8787 by default); keyshim "
                 "holds a pool of real keys, forwards each request with a healthy one and relays the "
                 "answer, streams included. When a key is rate-limited, out of credit or revoked, or the "
                 "upstream fails, it moves on to the next key while nothing has been sent to the tool yet.");
  page.paragraph("The keys and settings live in the pool file, described in keyshim-pool(5). "
                 "`keyshim init` writes one, `keyshim serve` runs the proxy, `keyshim env` prints the "
                 "variables that point common tools at it.");
  page.section("OPTIONS");
  for (const OptionDoc& option : root.options) {
    page.tagged(option_tag(option), sentence(option.description));
  }
  page.paragraph("Every command also takes `-h`, `--help`.");
}

void describe_files(Page& page) {
  page.section("FILES");
  page.tagged(italic("~/.config/keyshim/keys.toml"),
              "The pool file, unless -c FILE names another: " + std::string(config::k_default_config_rule) +
                  ". See keyshim-pool(5).");
  page.tagged(italic("~/.local/state/keyshim/state.json"),
              "Key health kept across restarts (state = true): " + std::string(config::k_state_file_rule) +
                  ". Fingerprints, never keys; delete it while keyshim is stopped to forget.");
  service::ServiceTarget target;
  target.home = "~";
  target.config_home = "~/.config";
  for (service::Platform platform : {service::Platform::systemd, service::Platform::launchd}) {
    target.platform = platform;
    page.tagged(italic(service::unit_file_path(target)),
                platform == service::Platform::systemd
                    ? "The systemd user unit `keyshim service install` writes on Linux."
                    : "The launchd agent `keyshim service install` writes on macOS.");
  }
}

} // namespace

std::string man_page_roff(const CommandDoc& root, std::string_view version) {
  Page page("KEYSHIM", 1, fmt::format("keyshim {}", version), "User Commands",
            "Generated by keyshim_docgen from the command line (src/cli); do not edit.");
  describe_program(page, root);
  page.section("COMMANDS");
  for (const CommandDoc* command : all_commands(root)) {
    if (command != &root) {
      describe_command(page, *command);
    }
  }
  page.section("EXIT STATUS");
  for (const HelpFact& code : exit_codes()) {
    page.tagged(bold(code.name), sentence(code.meaning));
  }
  if (std::any_of(root.subcommands.begin(), root.subcommands.end(),
                  [](const CommandDoc& command) { return command.path.back() == "run"; })) {
    page.paragraph("`keyshim run` exits with its command's exit status instead.");
  }
  page.section("ENVIRONMENT");
  for (const HelpFact& variable : environment_variables()) {
    page.tagged(bold(variable.name), sentence(variable.meaning));
  }
  page.paragraph("Each `key_env` setting of the pool file names one more variable, which holds a key.");
  describe_files(page);
  page.section("SEE ALSO");
  page.roff_line(".BR keyshim\\-pool (5),");
  page.roff_line(".BR systemctl (1),");
  page.roff_line(".BR journalctl (1)");
  return page.str();
}

} // namespace keyshim::cli::docs
