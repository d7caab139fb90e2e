#pragma once
// The variables that point common tools at a keyshim: what `keyshim env`
// prints and what `keyshim run` puts in its command's environment. Their
// key is the client_token or a placeholder, never a pool key.
#include "config/config.hpp"

#include <string>
#include <vector>

namespace keyshim::cli {

struct ToolVariable {
  std::string name;
  std::string value;
};

// KEYSHIM_URL, then the base URL and API key variables of each tool that a
// pool of `config` serves, for a keyshim listening on `listen` (HOST:PORT).
// `config` null (an unusable pool file): every tool at the bare URL.
std::vector<ToolVariable> tool_variables(const config::Config* config, const std::string& listen);

} // namespace keyshim::cli
