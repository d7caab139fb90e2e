#include "cli/tool_arguments.hpp"

#include <algorithm>

namespace keyshim::cli {
namespace {

const std::string* variable_value(const std::vector<ToolVariable>& variables, const std::string& name) {
  auto found = std::find_if(variables.begin(), variables.end(),
                            [&name](const ToolVariable& variable) { return variable.name == name; });
  return found == variables.end() ? nullptr : &found->value;
}

std::string basename_of(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// True when an argument after the command's name starts with `prefix`.
bool gives_setting(const std::vector<std::string>& argv, const std::string& prefix) {
  return std::any_of(argv.begin() + 1, argv.end(),
                     [&prefix](const std::string& argument) { return argument.rfind(prefix, 0) == 0; });
}

} // namespace

std::vector<ToolArguments> tool_arguments(const std::vector<ToolVariable>& variables) {
  std::vector<ToolArguments> out;
  const std::string* openai = variable_value(variables, "OPENAI_BASE_URL");
  if (openai == nullptr) {
    return out;
  }
  // Codex 0.171's built-in provider ignores OPENAI_BASE_URL and reads
  // openai_base_url from its config.toml, which `-c` overrides for one run.
  // The user's own `-c openai_base_url=X` (or `--config …`) wins.
  out.push_back(
      {"codex", {"-c", "openai_base_url=" + *openai}, "openai_base_url=", "Codex ignores OPENAI_BASE_URL"});
  // Qwen Code 0.15 picks the OpenAI auth type from the variables only when
  // OPENAI_MODEL is set too, which is the user's choice, not keyshim's.
  out.push_back({"qwen", {"--auth-type", "openai"}, "--auth-type", "Qwen Code needs its auth type selected"});
  return out;
}

std::vector<std::string> with_tool_arguments(const std::vector<std::string>& argv,
                                             const std::vector<ToolArguments>& tools) {
  if (argv.empty()) {
    return argv;
  }
  std::string name = basename_of(argv.front());
  auto tool = std::find_if(tools.begin(), tools.end(),
                           [&name](const ToolArguments& candidate) { return candidate.tool == name; });
  if (tool == tools.end()) {
    return argv;
  }
  if (gives_setting(argv, tool->given_as)) {
    return argv;
  }
  std::vector<std::string> out = {argv.front()};
  out.insert(out.end(), tool->arguments.begin(), tool->arguments.end());
  out.insert(out.end(), argv.begin() + 1, argv.end());
  return out;
}

} // namespace keyshim::cli
