#pragma once
#include <string>

namespace keyshim::config {

// $KEYSHIM_CONFIG, else $XDG_CONFIG_HOME/keyshim/keys.toml, else ~/.config/keyshim/keys.toml.
std::string default_config_path();

} // namespace keyshim::config
