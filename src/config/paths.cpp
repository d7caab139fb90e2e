#include "config/paths.hpp"

#include <cstdlib>

namespace keyshim::config {

std::string default_config_path() {
  if (const char* explicit_path = std::getenv("KEYSHIM_CONFIG"); explicit_path && *explicit_path) {
    return explicit_path;
  }
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/keyshim/keys.toml";
  }
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.config/keyshim/keys.toml";
}

std::string state_file_path() {
  // The XDG rule: a relative $XDG_STATE_HOME is invalid and ignored.
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg == '/') {
    return std::string(xdg) + "/keyshim/state.json";
  }
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.local/state/keyshim/state.json";
}

} // namespace keyshim::config
