#include "docs_support.hpp"

#include "cli/commands.hpp"
#include "support/run_binary.hpp"
#include "support/temp_dir.hpp"

namespace keyshim::test {
namespace {

void walk(const CLI::App& app, std::vector<std::string> path, std::vector<CliCommand>& out) {
  CliCommand command;
  command.path = path;
  for (const CLI::Option* option : app.get_options()) {
    bool is_help = option == app.get_help_ptr() || option == app.get_version_ptr();
    for (const std::string& name : option->get_snames()) {
      command.option_names.push_back("-" + name);
      if (is_help) {
        command.help_names.push_back("-" + name);
      }
    }
    for (const std::string& name : option->get_lnames()) {
      command.option_names.push_back("--" + name);
      if (is_help) {
        command.help_names.push_back("--" + name);
      }
    }
  }
  auto named = [](const CLI::App* sub) { return !sub->get_name().empty(); };
  std::vector<const CLI::App*> subs = app.get_subcommands(named);
  for (const CLI::App* sub : subs) {
    command.subcommands.push_back(sub->get_name());
  }
  out.push_back(command);
  for (const CLI::App* sub : subs) {
    std::vector<std::string> sub_path = path;
    sub_path.push_back(sub->get_name());
    walk(*sub, sub_path, out);
  }
}

} // namespace

std::vector<CliCommand> cli_commands() {
  cli::Cli cli = cli::make_cli();
  std::vector<CliCommand> out;
  walk(*cli.app, {}, out);
  return out;
}

std::string path_text(const CliCommand& command, const char* separator) {
  std::string text;
  for (const std::string& part : command.path) {
    text += (text.empty() ? "" : separator) + part;
  }
  return text;
}

std::string built_doc_path(const std::string& name) {
  return std::string(KEYSHIM_DOCS_DIR) + "/" + name;
}

std::string built_doc(const std::string& name) {
  return read_file(built_doc_path(name));
}

bool have_program(const std::string& program) {
  return run_binary({"sh", "-c", "command -v \"$0\" >/dev/null", program}).exit_code == 0;
}

} // namespace keyshim::test
