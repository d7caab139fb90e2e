#pragma once
// Settings that some tools read only from their own command line or files,
// never from a variable: what `keyshim run` inserts after the tool's name
// and what `keyshim env` prints as a comment to copy.
#include "cli/tool_variables.hpp"

#include <string>
#include <vector>

namespace keyshim::cli {

struct ToolArguments {
  std::string tool;                   // the command's name (basename of argv[0])
  std::vector<std::string> arguments; // inserted right after argv[0]
  std::string given_as;               // an argument starting so: the user set it already
  std::string why;                    // one line for `keyshim env`
};

// The arguments each tool needs besides `variables` (from tool_variables):
// Codex its base URL, Qwen Code its auth type. Empty for a keyshim without
// an OpenAI-compatible pool.
std::vector<ToolArguments> tool_arguments(const std::vector<ToolVariable>& variables);

// `argv` with the arguments of the tool it runs inserted after argv[0],
// unless the user already gave that setting; any other command unchanged.
std::vector<std::string> with_tool_arguments(const std::vector<std::string>& argv,
                                             const std::vector<ToolArguments>& tools);

} // namespace keyshim::cli
