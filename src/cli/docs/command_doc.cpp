#include "cli/docs/command_doc.hpp"

#include <string_view>
#include <utility>

namespace keyshim::cli::docs {
namespace {

// CLI11's full type name is the value's name, then ":" and each validator's
// description: "TEXT:{text,json}" for an IsMember check. Peels the checks'
// value lists off the end (into `choices`) and returns the value's name,
// which may hold a colon itself ("ADDR:PORT").
std::string split_type_name(const CLI::Option& option, std::vector<std::string>& choices) {
  std::string name = option.get_type_name();
  while (!name.empty() && name.back() == '}') {
    std::size_t open = name.rfind(":{");
    if (open == std::string::npos) {
      break;
    }
    std::vector<std::string> values;
    std::string_view list = std::string_view(name).substr(open + 2, name.size() - open - 3);
    while (!list.empty()) {
      std::size_t comma = list.find(',');
      values.emplace_back(list.substr(0, comma));
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    choices.insert(choices.begin(), values.begin(), values.end());
    name.erase(open);
  }
  return name;
}

OptionDoc describe_option(const CLI::Option& option, bool is_help) {
  OptionDoc doc;
  for (const std::string& name : option.get_snames()) {
    doc.names.push_back("-" + name);
  }
  for (const std::string& name : option.get_lnames()) {
    doc.names.push_back("--" + name);
  }
  std::string value_name = split_type_name(option, doc.choices);
  if (option.get_type_size_max() > 0) { // flags take no value
    doc.value_name = value_name;
  }
  doc.description = option.get_description();
  doc.is_help = is_help;
  return doc;
}

PositionalDoc describe_positional(const CLI::Option& option) {
  return {option.get_name(), option.get_description(), option.get_required(),
          option.get_items_expected_max() > 1};
}

CommandDoc describe_at(const CLI::App& app, std::vector<std::string> path) {
  CommandDoc doc;
  doc.path = std::move(path);
  doc.description = app.get_description();
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_positional()) {
      doc.positionals.push_back(describe_positional(*option));
    } else {
      bool is_help = option == app.get_help_ptr() || option == app.get_version_ptr();
      doc.options.push_back(describe_option(*option, is_help));
    }
  }
  auto named = [](const CLI::App* candidate) { return !candidate->get_name().empty(); };
  for (const CLI::App* sub : app.get_subcommands(named)) {
    std::vector<std::string> sub_path = doc.path;
    sub_path.push_back(sub->get_name());
    doc.subcommands.push_back(describe_at(*sub, std::move(sub_path)));
  }
  return doc;
}

void collect(const CommandDoc& doc, std::vector<const CommandDoc*>& out) {
  out.push_back(&doc);
  for (const CommandDoc& sub : doc.subcommands) {
    collect(sub, out);
  }
}

} // namespace

std::string CommandDoc::path_text() const {
  std::string text;
  for (const std::string& part : path) {
    text += (text.empty() ? "" : " ") + part;
  }
  return text;
}

std::string CommandDoc::full_name() const {
  return path.empty() ? "keyshim" : "keyshim " + path_text();
}

CommandDoc describe(const CLI::App& app) {
  return describe_at(app, {});
}

std::vector<const CommandDoc*> all_commands(const CommandDoc& root) {
  std::vector<const CommandDoc*> out;
  collect(root, out);
  return out;
}

} // namespace keyshim::cli::docs
